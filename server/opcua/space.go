package opcua

import (
	"strings"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/server"
	"github.com/gopcua/opcua/ua"
)

// NamespaceURI is the namespace of every node the server adds.
const NamespaceURI = "urn:ramanserve"

// space is the namespace urn:ramanserve: folders and read-only variables
// whose node ids are their paths ("ramanserve/Analytes/EPA/Value"). It
// implements the library's NameSpace; values are replaced whole under
// its lock and never changed in place, so a reader may keep the
// *ua.DataValue it got.
type space struct {
	mu       sync.RWMutex
	nsID     uint16
	nodes    map[string]*node // by path
	root     *node
	finished bool // node ids are known (the library gave the namespace its index)
}

type node struct {
	path     string
	name     string
	class    ua.NodeClass
	typeDef  uint32 // FolderType, BaseDataVariableType, PropertyType
	dataType uint32 // variables only
	parent   *node
	refType  uint32 // of the reference from parent to this node
	children []*node
	value    *ua.DataValue
	lib      *server.Node // what the library's own browse asks of a target in our namespace
}

func newSpace() *space {
	s := &space{nodes: make(map[string]*node)}
	s.root = s.addFolder(nil, "ramanserve")
	return s
}

func (s *space) nodeID(path string) *ua.NodeID { return ua.NewStringNodeID(s.nsID, path) }

func (s *space) add(parent *node, name string, class ua.NodeClass, typeDef, dataType, refType uint32) *node {
	path := name
	if parent != nil {
		path = parent.path + "/" + name
	}
	if n, ok := s.nodes[path]; ok {
		return n
	}
	n := &node{path: path, name: name, class: class, typeDef: typeDef, dataType: dataType, parent: parent, refType: refType}
	if parent != nil {
		parent.children = append(parent.children, n)
	}
	s.nodes[path] = n
	if s.finished {
		n.lib = s.libNode(n)
	}
	return n
}

func (s *space) addFolder(parent *node, name string) *node {
	return s.add(parent, name, ua.NodeClassObject, id.FolderType, 0, id.Organizes)
}

func (s *space) addVariable(parent *node, name string, dataType uint32, initial *ua.DataValue) *node {
	n := s.add(parent, name, ua.NodeClassVariable, id.BaseDataVariableType, dataType, id.HasComponent)
	n.value = initial
	return n
}

func (s *space) addProperty(parent *node, name string, dataType uint32, v *ua.DataValue) *node {
	n := s.add(parent, name, ua.NodeClassVariable, id.PropertyType, dataType, id.HasProperty)
	n.value = v
	return n
}

// setID is called by the library when the namespace is added; node ids
// are only built after it.
func (s *space) finish(nsID uint16) {
	s.nsID = nsID
	s.finished = true
	for _, n := range s.nodes {
		n.lib = s.libNode(n)
	}
}

func (s *space) libNode(n *node) *server.Node {
	return server.NewNode(s.nodeID(n.path), server.Attributes{
		ua.AttributeIDNodeClass:  server.DataValueFromValue(uint32(n.class)),
		ua.AttributeIDBrowseName: server.DataValueFromValue(&ua.QualifiedName{NamespaceIndex: s.nsID, Name: n.name}),
		ua.AttributeIDDataType:   server.DataValueFromValue(ua.NewNumericExpandedNodeID(0, n.typeDef)),
	}, nil, nil)
}

// set replaces a variable's value; the caller holds s.mu.
func (n *node) set(v *ua.DataValue) { n.value = v }

// NameSpace, as the library asks it.

func (s *space) Name() string { return NamespaceURI }

// AddNode refuses: the address space is built by this package only.
func (s *space) AddNode(n *server.Node) *server.Node { return nil }

func (s *space) lookup(nid *ua.NodeID) *node {
	if nid == nil || nid.Namespace() != s.nsID || nid.Type() != ua.NodeIDTypeString {
		return nil
	}
	return s.nodes[nid.StringID()]
}

func (s *space) Node(nid *ua.NodeID) *server.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.lookup(nid); n != nil {
		return n.lib
	}
	return nil
}

func (s *space) Objects() *server.Node { return s.root.lib }
func (s *space) Root() *server.Node    { return s.root.lib }
func (s *space) ID() uint16            { return s.nsID }
func (s *space) SetID(i uint16)        { s.nsID = i }

// SetAttribute refuses every write: the server only publishes.
func (s *space) SetAttribute(*ua.NodeID, ua.AttributeID, *ua.DataValue) ua.StatusCode {
	return ua.StatusBadNotWritable
}

func attr(v any) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}
}

func attrStatus(code ua.StatusCode) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode | ua.DataValueServerTimestamp, Status: code, ServerTimestamp: time.Now()}
}

func (s *space) Attribute(nid *ua.NodeID, a ua.AttributeID) *ua.DataValue {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.lookup(nid)
	if n == nil {
		return attrStatus(ua.StatusBadNodeIDUnknown)
	}
	switch a {
	case ua.AttributeIDNodeID:
		return attr(s.nodeID(n.path))
	case ua.AttributeIDNodeClass:
		return attr(int32(n.class))
	case ua.AttributeIDBrowseName:
		return attr(&ua.QualifiedName{NamespaceIndex: s.nsID, Name: n.name})
	case ua.AttributeIDDisplayName:
		return attr(&ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: n.name})
	case ua.AttributeIDDescription:
		return attr(&ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: description(n)})
	case ua.AttributeIDWriteMask, ua.AttributeIDUserWriteMask:
		return attr(uint32(0))
	}
	if n.class == ua.NodeClassObject {
		if a == ua.AttributeIDEventNotifier {
			return attr(byte(0))
		}
		return attrStatus(ua.StatusBadAttributeIDInvalid)
	}
	switch a {
	case ua.AttributeIDValue:
		return n.value
	case ua.AttributeIDDataType:
		return attr(ua.NewNumericNodeID(0, n.dataType))
	case ua.AttributeIDValueRank:
		return attr(int32(-1)) // scalar
	case ua.AttributeIDArrayDimensions:
		return attr([]uint32{})
	case ua.AttributeIDAccessLevel, ua.AttributeIDUserAccessLevel:
		return attr(byte(ua.AccessLevelTypeCurrentRead))
	case ua.AttributeIDMinimumSamplingInterval:
		return attr(float64(0))
	case ua.AttributeIDHistorizing:
		return attr(false)
	}
	return attrStatus(ua.StatusBadAttributeIDInvalid)
}

func description(n *node) string {
	switch n.name {
	case "Value":
		return "Predicted concentration (g/L)"
	case "Confidence":
		return "Confidence of the prediction, 0 to 1"
	case "ModelVersion":
		return "Version of the model that made the prediction"
	case "T2Reduced":
		return "Hotelling T2 over its 95 % limit"
	case "QReduced":
		return "Q residual over its 95 % limit"
	case "LastErrorCode":
		return "Error code of the last failed predict"
	}
	return ""
}

// Browse answers one BrowseDescription.
func (s *space) Browse(bd *ua.BrowseDescription) *ua.BrowseResult {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.lookup(bd.NodeID)
	if n == nil {
		return &ua.BrowseResult{StatusCode: ua.StatusBadNodeIDUnknown}
	}
	var refs []*ua.ReferenceDescription
	forward := bd.BrowseDirection == ua.BrowseDirectionForward || bd.BrowseDirection == ua.BrowseDirectionBoth
	inverse := bd.BrowseDirection == ua.BrowseDirectionInverse || bd.BrowseDirection == ua.BrowseDirectionBoth
	if forward {
		if wanted(bd, id.HasTypeDefinition, ua.NodeClassObjectType|ua.NodeClassVariableType) {
			class := ua.NodeClassObjectType
			if n.class == ua.NodeClassVariable {
				class = ua.NodeClassVariableType
			}
			refs = append(refs, &ua.ReferenceDescription{
				ReferenceTypeID: ua.NewNumericNodeID(0, id.HasTypeDefinition), IsForward: true,
				NodeID:     ua.NewNumericExpandedNodeID(0, n.typeDef),
				BrowseName: &ua.QualifiedName{Name: typeName(n.typeDef)}, DisplayName: text(typeName(n.typeDef)),
				NodeClass: class, TypeDefinition: ua.NewTwoByteExpandedNodeID(0),
			})
		}
		for _, c := range n.children {
			if wanted(bd, c.refType, c.class) {
				refs = append(refs, s.ref(c, c.refType, true))
			}
		}
	}
	if inverse {
		switch {
		case n.parent != nil && wanted(bd, n.refType, n.parent.class):
			refs = append(refs, s.ref(n.parent, n.refType, false))
		case n == s.root && wanted(bd, id.Organizes, ua.NodeClassObject):
			refs = append(refs, &ua.ReferenceDescription{
				ReferenceTypeID: ua.NewNumericNodeID(0, id.Organizes),
				NodeID:          ua.NewNumericExpandedNodeID(0, id.ObjectsFolder),
				BrowseName:      &ua.QualifiedName{Name: "Objects"}, DisplayName: text("Objects"),
				NodeClass: ua.NodeClassObject, TypeDefinition: ua.NewNumericExpandedNodeID(0, id.FolderType),
			})
		}
	}
	return &ua.BrowseResult{StatusCode: ua.StatusOK, References: refs}
}

func (s *space) ref(n *node, refType uint32, forward bool) *ua.ReferenceDescription {
	return &ua.ReferenceDescription{
		ReferenceTypeID: ua.NewNumericNodeID(0, refType), IsForward: forward,
		NodeID:     ua.NewExpandedNodeID(s.nodeID(n.path), "", 0),
		BrowseName: &ua.QualifiedName{NamespaceIndex: s.nsID, Name: n.name}, DisplayName: text(n.name),
		NodeClass: n.class, TypeDefinition: ua.NewNumericExpandedNodeID(0, n.typeDef),
	}
}

func text(s string) *ua.LocalizedText {
	return &ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: s}
}

func typeName(t uint32) string {
	switch t {
	case id.FolderType:
		return "FolderType"
	case id.PropertyType:
		return "PropertyType"
	}
	return "BaseDataVariableType"
}

// wanted applies a BrowseDescription's reference type and node class
// filters to a reference of type refType to a node of class.
func wanted(bd *ua.BrowseDescription, refType uint32, class ua.NodeClass) bool {
	if bd.NodeClassMask != 0 && bd.NodeClassMask&uint32(class) == 0 {
		return false
	}
	want := bd.ReferenceTypeID
	switch {
	case want == nil || want.Namespace() == 0 && want.IntID() == 0:
		return true
	case want.Namespace() != 0:
		return false
	case want.IntID() == refType:
		return true
	}
	return bd.IncludeSubtypes && subtypeOf(refType, want.IntID())
}

// subtypeOf: the reference type hierarchy of the types this namespace uses.
func subtypeOf(t, of uint32) bool {
	for t != 0 {
		if t == of {
			return true
		}
		switch t {
		case id.Organizes, id.HasChild:
			t = id.HierarchicalReferences
		case id.HasComponent, id.HasProperty:
			t = id.Aggregates
		case id.Aggregates:
			t = id.HasChild
		case id.HasTypeDefinition:
			t = id.NonHierarchicalReferences
		case id.HierarchicalReferences, id.NonHierarchicalReferences:
			t = id.References
		default:
			return false
		}
	}
	return false
}

// pathName cleans a source name into one browse name: no slash, since
// node ids are paths.
func pathName(source string) string { return strings.ReplaceAll(source, "/", "_") }
