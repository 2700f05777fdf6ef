package opcua

import (
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"ramanserve/inference"
	"ramanserve/server/contract"
	"ramanserve/service/live"
)

// Status codes of the published values (docs/opcua.md).
var (
	// StatusOutOfDomain marks a prediction whose spectrum lies outside the
	// model's domain (reduced T² or Q over 1) or whose confidence is below
	// the threshold: the closest standard code is Uncertain_SensorNotAccurate.
	StatusOutOfDomain = ua.StatusUncertainSensorNotAccurate
	// StatusNoValueYet is every value's status before its first prediction.
	StatusNoValueYet = ua.StatusBadWaitingForInitialData
)

// StatusOfFailure maps the channel's error code of a failed predict to the
// Bad status its values take (they keep their last good value).
func StatusOfFailure(code string) ua.StatusCode {
	switch contract.Code(code) {
	case contract.InvalidSpectrum, contract.SpectrumOutOfRange, contract.InvalidRequest,
		contract.MalformedMessage, contract.MessageTooLarge:
		return ua.StatusBadSensorFailure // the spectrum sent could not be used
	case contract.ModelNotLoaded:
		return ua.StatusBadConfigurationError
	case contract.ServerBusy:
		return ua.StatusBadResourceUnavailable
	}
	return ua.StatusBadInternalError
}

// EngineeringUnits of the concentrations: gram per litre, UNECE code GL.
var gramPerLitre = &ua.EUInformation{
	NamespaceURI: "http://www.opcfoundation.org/UA/units/un/cefact",
	UnitID:       'G'<<8 | 'L',
	DisplayName:  &ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: "g/L"},
	Description:  &ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: "gram per litre"},
}

type analyteNodes struct{ value, confidence, version *node }

// sourceNodes are the variables of one source: the channel as a whole
// (Analytes and Diagnostics) or one port (Ports/{port}).
type sourceNodes struct {
	analytes        [inference.NumAnalytes]analyteNodes
	t2, q, lastCode *node
}

// layout is the address space's variables.
type layout struct {
	all                   sourceNodes
	ports                 *node
	bySource              map[string]*sourceNodes
	active, shadow, ready *node
}

func initial(v any) *ua.DataValue {
	return &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueStatusCode | ua.DataValueServerTimestamp,
		Value:           ua.MustVariant(v),
		Status:          StatusNoValueYet,
		ServerTimestamp: time.Now(),
	}
}

func goodNow(v any) *ua.DataValue {
	now := time.Now()
	return &ua.DataValue{
		EncodingMask: ua.DataValueValue | ua.DataValueStatusCode | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:        ua.MustVariant(v), Status: ua.StatusOK, SourceTimestamp: now, ServerTimestamp: now,
	}
}

// build adds the fixed folders and variables under the root.
func build(s *space) *layout {
	l := &layout{bySource: make(map[string]*sourceNodes)}
	analytes := s.addFolder(s.root, "Analytes")
	diag := s.addFolder(s.root, "Diagnostics")
	addSource(s, &l.all, analytes, diag)
	l.ports = s.addFolder(s.root, "Ports")
	srv := s.addFolder(s.root, "Server")
	l.active = s.addVariable(srv, "ActiveModelVersion", id.String, initial(""))
	l.shadow = s.addVariable(srv, "ShadowModelVersion", id.String, initial(""))
	l.ready = s.addVariable(srv, "Ready", id.Boolean, initial(false))
	return l
}

func addSource(s *space, src *sourceNodes, analytes, diag *node) {
	for a := range inference.NumAnalytes {
		f := s.addFolder(analytes, inference.Analyte(a).String())
		v := s.addVariable(f, "Value", id.Double, initial(0.0))
		s.addProperty(v, "EngineeringUnits", id.EUInformation, attr(ua.NewExtensionObject(gramPerLitre)))
		src.analytes[a] = analyteNodes{
			value:      v,
			confidence: s.addVariable(f, "Confidence", id.Double, initial(0.0)),
			version:    s.addVariable(f, "ModelVersion", id.String, initial("")),
		}
	}
	src.t2 = s.addVariable(diag, "T2Reduced", id.Double, initial(0.0))
	src.q = s.addVariable(diag, "QReduced", id.Double, initial(0.0))
	src.lastCode = s.addVariable(diag, "LastErrorCode", id.String, initial(""))
}

// source returns the variables of a source, adding its folder the first
// time. The feed bounds the sources, so the address space is bounded too.
func (l *layout) source(s *space, name string) *sourceNodes {
	if name == "" {
		return &l.all
	}
	if src, ok := l.bySource[name]; ok {
		return src
	}
	src := &sourceNodes{}
	f := s.addFolder(l.ports, pathName(name))
	addSource(s, src, f, s.addFolder(f, "Diagnostics"))
	l.bySource[name] = src
	return src
}

// valueRules are what decides a value's status.
type valueRules struct {
	UncertainBelow float64 // a confidence below it makes the value Uncertain
}

// apply writes o into src's variables and appends those that changed to
// changed: model versions first, so a subscriber sees a new version in
// the same publish as the first value of the model, or earlier. The
// caller holds the space's lock.
func (r valueRules) apply(src *sourceNodes, o *live.Outcome, changed []*node) []*node {
	stamp := func(v any, status ua.StatusCode) *ua.DataValue {
		return &ua.DataValue{
			EncodingMask: ua.DataValueValue | ua.DataValueStatusCode | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
			Value:        ua.MustVariant(v), Status: status, SourceTimestamp: o.Source, ServerTimestamp: o.Replied,
		}
	}
	keep := func(n *node, status ua.StatusCode) *ua.DataValue {
		d := stamp(0.0, status)
		d.Value = n.value.Value // the last good value stays
		return d
	}
	if o.Failed {
		bad := StatusOfFailure(o.ErrorCode)
		for a := range src.analytes {
			an := &src.analytes[a]
			an.value.set(keep(an.value, bad))
			an.confidence.set(keep(an.confidence, bad))
			changed = append(changed, an.value, an.confidence)
		}
		src.t2.set(keep(src.t2, bad))
		src.q.set(keep(src.q, bad))
		src.lastCode.set(stamp(o.ErrorCode, ua.StatusOK))
		return append(changed, src.t2, src.q, src.lastCode)
	}
	for a := range src.analytes {
		an := &src.analytes[a]
		if cur, _ := an.version.value.Value.Value().(string); cur != o.ModelVersion || an.version.value.Status != ua.StatusOK {
			an.version.set(stamp(o.ModelVersion, ua.StatusOK))
			changed = append(changed, an.version)
		}
	}
	p := &o.Prediction
	d := &p.Diagnostics
	outOfDomain := d.HasT2 && d.ReducedT2 > 1 || d.HasQ && d.HasQLim && d.ReducedQ > 1
	for a := range src.analytes {
		an := &src.analytes[a]
		if !p.Concentrations.Valid[a] {
			an.value.set(keep(an.value, ua.StatusBadNoData))
			an.confidence.set(keep(an.confidence, ua.StatusBadNoData))
			changed = append(changed, an.value, an.confidence)
			continue
		}
		status := ua.StatusOK
		conf, hasConf := p.Confidence.Value[a], p.Confidence.Valid[a]
		if outOfDomain || hasConf && conf < r.UncertainBelow {
			status = StatusOutOfDomain
		}
		an.value.set(stamp(p.Concentrations.Value[a], status))
		if hasConf {
			an.confidence.set(stamp(conf, ua.StatusOK))
		} else {
			an.confidence.set(keep(an.confidence, ua.StatusBadNoData))
		}
		changed = append(changed, an.value, an.confidence)
	}
	diag := func(n *node, has bool, v float64) {
		if has {
			n.set(stamp(v, ua.StatusOK))
		} else {
			n.set(keep(n, ua.StatusBadNoData))
		}
		changed = append(changed, n)
	}
	diag(src.t2, d.HasT2, d.ReducedT2)
	diag(src.q, d.HasQ && d.HasQLim, d.ReducedQ)
	return changed
}
