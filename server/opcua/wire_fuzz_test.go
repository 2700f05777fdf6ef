package opcua

import (
	"encoding/binary"
	"testing"

	"github.com/gopcua/opcua/ua"
)

func seedHello() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0)
	for range 4 {
		b = binary.LittleEndian.AppendUint32(b, 65535)
	}
	return str(b, []byte("opc.tcp://localhost:4840"))
}

func seedOpen(cert []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0)
	b = str(b, []byte(ua.SecurityPolicyURIBasic256Sha256))
	b = str(b, cert)
	return str(b, nil)
}

// FuzzWire: the gate's readers of client bytes never panic, never read
// past their input, and keep within their bounds.
func FuzzWire(f *testing.F) {
	f.Add([]byte("HELF\x30\x00\x00\x00"), seedHello())
	f.Add([]byte("OPNF\x00\x01\x00\x00"), seedOpen([]byte{0x30, 0x82, 0x01}))
	f.Add([]byte("MSGC\xff\xff\x00\x00"), append(make([]byte, 16), 0x01, 0x00, 0xac, 0x01))
	f.Add([]byte("ERRA\x07\x00\x00\x00"), []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, head, body []byte) {
		if h, err := parseHeader(head); err == nil && (h.Size < headerLen || h.Size > maxChunkBytes) {
			t.Fatalf("header size %d accepted", h.Size)
		}
		if h, err := parseHello(body); err == nil && len(h.EndpointURL) > maxEndpointURLBytes {
			t.Fatalf("endpoint URL of %d bytes accepted", len(h.EndpointURL))
		}
		if o, err := parseOpen(body); err == nil {
			if len(o.SecurityPolicyURI) > maxPolicyURIBytes || len(o.SenderCertificate) > maxCertBytes {
				t.Fatalf("open header over its bounds: %d, %d", len(o.SecurityPolicyURI), len(o.SenderCertificate))
			}
		}
		plainServiceType(body)
		if got := appendError(nil, 1, string(body)); binary.LittleEndian.Uint32(got[4:]) != uint32(len(got)) {
			t.Fatal("ERR size does not match its length")
		}
	})
}
