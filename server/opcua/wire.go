package opcua

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The parts of OPC UA's binary TCP mapping (Part 6, 7.1) that the gate
// reads before the library sees a byte: message headers, the Hello, and
// the plain-text asymmetric security header of OpenSecureChannel, which
// names the security policy and carries the client's certificate. The
// library decodes everything else.

const headerLen = 8 // message type (3), chunk type (1), size (uint32)

// Bounds of what the gate reads. A chunk is at most the library's receive
// buffer; a Hello is its fixed fields and an endpoint URL.
const (
	maxChunkBytes       = 0xffff
	maxEndpointURLBytes = 4096
	maxHelloBytes       = headerLen + 20 + 4 + maxEndpointURLBytes
	maxPolicyURIBytes   = 256
	maxCertBytes        = 32 << 10
	maxThumbprintBytes  = 64
)

// header is a message's first 8 bytes.
type header struct {
	Type  string // "HEL", "OPN", "MSG", "CLO", ...
	Chunk byte   // 'F' final, 'C' intermediate, 'A' abort
	Size  uint32 // the whole message, header included
}

var errWire = errors.New("opc ua: malformed message")

func parseHeader(b []byte) (header, error) {
	if len(b) < headerLen {
		return header{}, errWire
	}
	h := header{Type: string(b[:3]), Chunk: b[3], Size: binary.LittleEndian.Uint32(b[4:8])}
	if h.Size < headerLen || h.Size > maxChunkBytes {
		return h, fmt.Errorf("%w: message size %d outside %d..%d", errWire, h.Size, headerLen, maxChunkBytes)
	}
	switch h.Chunk {
	case 'F', 'C', 'A':
	default:
		return h, fmt.Errorf("%w: chunk type %q", errWire, h.Chunk)
	}
	return h, nil
}

// hello is the client's Hello (Part 6, 7.1.2.3).
type hello struct {
	ProtocolVersion   uint32
	ReceiveBufferSize uint32
	SendBufferSize    uint32
	MaxMessageSize    uint32
	MaxChunkCount     uint32
	EndpointURL       string
}

// parseHello reads a Hello's body (after the header).
func parseHello(body []byte) (hello, error) {
	r := reader{b: body}
	h := hello{
		ProtocolVersion:   r.u32(),
		ReceiveBufferSize: r.u32(),
		SendBufferSize:    r.u32(),
		MaxMessageSize:    r.u32(),
		MaxChunkCount:     r.u32(),
	}
	url, ok := r.bytes(maxEndpointURLBytes)
	h.EndpointURL = string(url)
	if r.err != nil || !ok || r.left() != 0 {
		return hello{}, fmt.Errorf("%w: hello", errWire)
	}
	return h, nil
}

// openHeader is an OpenSecureChannel's asymmetric security header
// (Part 6, 6.7.2.3), which is never encrypted.
type openHeader struct {
	SecureChannelID   uint32
	SecurityPolicyURI string
	SenderCertificate []byte // DER, possibly a chain; nil for policy None
}

// parseOpen reads the asymmetric header of an OPN message's body.
func parseOpen(body []byte) (openHeader, error) {
	r := reader{b: body}
	o := openHeader{SecureChannelID: r.u32()}
	uri, ok1 := r.bytes(maxPolicyURIBytes)
	cert, ok2 := r.bytes(maxCertBytes)
	_, ok3 := r.bytes(maxThumbprintBytes)
	if r.err != nil || !ok1 || uri == nil {
		return openHeader{}, fmt.Errorf("%w: open secure channel header", errWire)
	}
	if !ok2 || !ok3 {
		return openHeader{}, fmt.Errorf("%w: open secure channel certificate", errWire)
	}
	o.SecurityPolicyURI = string(uri)
	if cert != nil {
		o.SenderCertificate = append([]byte(nil), cert...)
	}
	return o, nil
}

// appendError appends an ERR message (Part 6, 7.1.2.5) with code and reason.
func appendError(dst []byte, code uint32, reason string) []byte {
	if len(reason) > 4096 {
		reason = reason[:4096]
	}
	size := headerLen + 4 + 4 + len(reason)
	dst = append(dst, 'E', 'R', 'R', 'F')
	dst = binary.LittleEndian.AppendUint32(dst, uint32(size))
	dst = binary.LittleEndian.AppendUint32(dst, code)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(reason)))
	return append(dst, reason...)
}

// reader reads little-endian fields, remembering the first overrun.
type reader struct {
	b   []byte
	err error
}

func (r *reader) left() int { return len(r.b) }

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.err = errWire
		r.b = nil
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

// bytes reads a String or ByteString: an int32 length, -1 for null (nil,
// true), then that many bytes. ok is false when the length is over limit.
func (r *reader) bytes(limit int) (b []byte, ok bool) {
	n := int32(r.u32())
	if r.err != nil {
		return nil, false
	}
	switch {
	case n == -1:
		return nil, true
	case n < 0 || int(n) > limit:
		return nil, false
	case int(n) > len(r.b):
		r.err = errWire
		return nil, false
	}
	b, r.b = r.b[:n:n], r.b[n:]
	if b == nil {
		b = []byte{}
	}
	return b, true
}

// plainServiceType reads the service type of an unencrypted MSG chunk's
// body (SecurityPolicy None): after the secure channel id, the token id
// and the sequence header comes the request's type, a NodeId in
// namespace 0 (Part 6, 6.7.2 and 5.2.2.9). ok is false for anything else.
func plainServiceType(body []byte) (typeID uint32, ok bool) {
	const skip = 4 + 4 + 4 + 4 // channel, token, sequence number, request id
	if len(body) < skip+1 {
		return 0, false
	}
	b := body[skip:]
	switch {
	case b[0] == 0x00 && len(b) >= 2: // two-byte NodeId
		return uint32(b[1]), true
	case b[0] == 0x01 && len(b) >= 4 && b[1] == 0: // four-byte NodeId, namespace 0
		return uint32(binary.LittleEndian.Uint16(b[2:4])), true
	case b[0] == 0x02 && len(b) >= 7 && b[1] == 0 && b[2] == 0: // numeric NodeId, namespace 0
		return binary.LittleEndian.Uint32(b[3:7]), true
	}
	return 0, false
}
