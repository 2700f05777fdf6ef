package opcua

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// raw is an OPC UA TCP connection spoken by hand, for what a library
// client does not show: the status code of the ERR message a refusal
// sends.
type raw struct {
	t *testing.T
	c net.Conn
}

func dialRaw(t *testing.T, f *fixture) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.srv.Addr().String(), wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wait))
	return &raw{t: t, c: c}
}

func str(b []byte, s []byte) []byte {
	if s == nil {
		return binary.LittleEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func (r *raw) send(typ string, body []byte) {
	r.t.Helper()
	msg := append([]byte(typ+"F"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(msg[4:], uint32(headerLen+len(body)))
	if _, err := r.c.Write(append(msg, body...)); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the next message's type and body.
func (r *raw) read() (string, []byte) {
	r.t.Helper()
	h := make([]byte, headerLen)
	if _, err := io.ReadFull(r.c, h); err != nil {
		r.t.Fatalf("reading a reply: %v", err)
	}
	body := make([]byte, binary.LittleEndian.Uint32(h[4:])-headerLen)
	if _, err := io.ReadFull(r.c, body); err != nil {
		r.t.Fatal(err)
	}
	return string(h[:3]), body
}

func (r *raw) hello(url string) {
	r.t.Helper()
	b := binary.LittleEndian.AppendUint32(nil, 0)
	for range 4 {
		b = binary.LittleEndian.AppendUint32(b, 65535)
	}
	r.send("HEL", str(b, []byte(url)))
	if typ, _ := r.read(); typ != "ACK" {
		r.t.Fatalf("hello answered %s", typ)
	}
}

// open sends an OpenSecureChannel of policy with cert; for policy None
// it is a valid request the library answers.
func (r *raw) open(policy string, cert []byte) {
	r.t.Helper()
	b := binary.LittleEndian.AppendUint32(nil, 0) // secure channel id
	b = str(b, []byte(policy))
	b = str(b, cert)
	b = str(b, nil)
	b = binary.LittleEndian.AppendUint32(b, 1) // sequence number
	b = binary.LittleEndian.AppendUint32(b, 1) // request id
	b = append(b, 0x01, 0x00)
	b = binary.LittleEndian.AppendUint16(b, id.OpenSecureChannelRequest_Encoding_DefaultBinary)
	req, err := ua.Encode(&ua.OpenSecureChannelRequest{
		RequestHeader:     &ua.RequestHeader{AuthenticationToken: ua.NewTwoByteNodeID(0), Timestamp: time.Now(), AdditionalHeader: ua.NewExtensionObject(nil)},
		RequestType:       ua.SecurityTokenRequestTypeIssue,
		SecurityMode:      ua.MessageSecurityModeNone,
		ClientNonce:       []byte{},
		RequestedLifetime: 60000,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.send("OPN", append(b, req...))
}

// errCode reads the next message, which must be an ERR, and returns its
// status code.
func (r *raw) errCode() ua.StatusCode {
	r.t.Helper()
	typ, body := r.read()
	if typ != "ERR" || len(body) < 4 {
		r.t.Fatalf("got %s, want an ERR message", typ)
	}
	return ua.StatusCode(binary.LittleEndian.Uint32(body))
}

// The refusals of the gate, with the status code each sends.
func TestGateRefusalCodes(t *testing.T) {
	f := start(t, func(o *Options) { o.AllowInsecure = false })
	stranger := newIdentity(t, "urn:ramanserve:stranger")

	r := dialRaw(t, f)
	r.hello(f.endpointURL())
	r.open(ua.SecurityPolicyURIBasic256Sha256, stranger.der)
	if code := r.errCode(); code != ua.StatusBadCertificateUntrusted {
		t.Errorf("an untrusted certificate: %s, want BadCertificateUntrusted", code)
	}

	r = dialRaw(t, f)
	r.hello(f.endpointURL())
	r.open(ua.SecurityPolicyURIBasic256, f.client.der)
	if code := r.errCode(); code != ua.StatusBadSecurityPolicyRejected {
		t.Errorf("a policy not offered: %s, want BadSecurityPolicyRejected", code)
	}

	// None opens (discovery needs it), and refuses a session.
	r = dialRaw(t, f)
	r.hello(f.endpointURL())
	r.open(ua.SecurityPolicyURINone, nil)
	if typ, _ := r.read(); typ != "OPN" {
		t.Fatalf("a None channel was answered %s, want OPN", typ)
	}
	b := make([]byte, 16) // channel, token, sequence number, request id
	b = append(b, 0x01, 0x00)
	b = binary.LittleEndian.AppendUint16(b, id.CreateSessionRequest_Encoding_DefaultBinary)
	r.send("MSG", b)
	if code := r.errCode(); code != ua.StatusBadSecurityPolicyRejected {
		t.Errorf("a session over None without the flag: %s, want BadSecurityPolicyRejected", code)
	}

	r = dialRaw(t, f)
	r.send("MSG", make([]byte, 16))
	if code := r.errCode(); code != ua.StatusBadTCPMessageTypeInvalid {
		t.Errorf("a message before Hello: %s, want BadTcpMessageTypeInvalid", code)
	}
}
