package channel_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"ramanserve/inference"
	"ramanserve/server/channel"
	"ramanserve/server/codec"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// These tests keep api/messages.md honest: its hex dump of a ping and its
// pong (section 7.1) must be what this server decodes and answers, byte for
// byte, and every reply must use only the MessagePack formats its section
// 2.1 lists.

const messagesDoc = "../../api/messages.md"

// docHexDump returns the bytes of the annotated hex dump that follows
// "<!-- hexdump: name -->" in messages.md (on each line of the fenced block,
// the two-digit hex tokens before the '#'), and the comments, one per item
// (continuation lines, "...", left out).
func docHexDump(t *testing.T, name string) (data []byte, comments []string) {
	t.Helper()
	doc, err := os.ReadFile(messagesDoc)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- hexdump: " + name + " -->\n```text\n"
	start := bytes.Index(doc, []byte(marker))
	if start < 0 {
		t.Fatalf("%s has no hex dump %q (marker %q)", messagesDoc, name, marker)
	}
	block := doc[start+len(marker):]
	end := bytes.Index(block, []byte("```"))
	if end < 0 {
		t.Fatalf("hex dump %q is not closed", name)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(block[:end]), "\n"), "\n") {
		code, comment, _ := strings.Cut(line, "#")
		for _, tok := range strings.Fields(code) {
			b, err := hex.DecodeString(tok)
			if err != nil || len(b) != 1 {
				t.Fatalf("hex dump %q line %d: %q is not one hex byte", name, i+1, tok)
			}
			data = append(data, b[0])
		}
		if c := strings.TrimSpace(comment); c != "..." {
			comments = append(comments, c)
		}
	}
	return data, comments
}

// annotate describes each item of a MessagePack value as the hex dumps of
// messages.md do, for the formats a ping and a pong use.
func annotate(b []byte) []string {
	var out []string
	pos := 0
	var value func(isKey bool)
	value = func(isKey bool) {
		if pos >= len(b) {
			out = append(out, "truncated")
			return
		}
		c := b[pos]
		pos++
		switch {
		case c <= 0x7f:
			out = append(out, fmt.Sprintf("%d (positive fixint)", c))
		case c >= 0x80 && c <= 0x8f:
			out = append(out, fmt.Sprintf("map of %d (fixmap)", c&0x0f))
			for range int(c & 0x0f) {
				value(true)
				value(false)
			}
		case (c >= 0xa0 && c <= 0xbf) || c == 0xd9:
			n, form := int(c&0x1f), "fixstr"
			if c == 0xd9 && pos < len(b) {
				n, form = int(b[pos]), "str8"
				pos++
			}
			n = min(n, len(b)-pos)
			text := string(b[pos : pos+n])
			pos += n
			if isKey {
				out = append(out, fmt.Sprintf("key %q", text))
			} else {
				out = append(out, fmt.Sprintf("%q (%s, %d bytes)", text, form, n))
			}
		case c == 0xcb && pos+8 <= len(b):
			v := math.Float64frombits(binary.BigEndian.Uint64(b[pos:]))
			pos += 8
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64)+" (float64)")
		case c == 0xc0:
			out = append(out, "nil")
		default:
			out = append(out, fmt.Sprintf("format 0x%02x", c))
			pos = len(b)
		}
	}
	value(false)
	if pos != len(b) {
		out = append(out, "trailing bytes")
	}
	return out
}

// checkAnnotations fails when a hex dump's comments do not describe its bytes.
func checkAnnotations(t *testing.T, name string, data []byte, comments []string) {
	t.Helper()
	want := annotate(data)
	if strings.Join(want, "\n") != strings.Join(comments, "\n") {
		t.Errorf("the comments of hex dump %q do not describe its bytes:\ndoc:\n%s\nbytes:\n%s",
			name, strings.Join(comments, "\n"), strings.Join(want, "\n"))
	}
}

// docModel is a real PLS model trained once on synthetic spectra.
var docModel = sync.OnceValues(func() (*inference.PLSModel, error) {
	res, err := trainer.Train(context.Background(), synth.New(synth.Config{Seed: 31}).Dataset(120),
		trainer.Options{Seed: 1, MaxComponents: 8}, nil)
	if err != nil {
		return nil, err
	}
	return inference.NewPLSModel(res.Params, inference.ModelOptions{})
})

func trainedModel(t *testing.T, version string) inference.Model {
	t.Helper()
	m, err := docModel()
	if err != nil {
		t.Fatal(err)
	}
	return versioned{m, version}
}

// versioned serves a model under another version name.
type versioned struct {
	*inference.PLSModel
	version string
}

func (v versioned) Metadata() *inference.Metadata {
	meta := *v.PLSModel.Metadata()
	meta.Version = v.version
	return &meta
}

type activeModel struct{ m inference.Model }

func (a activeModel) Active() inference.Model { return a.m }

// instantOf returns the time whose envelope ts (codec.Unix) is exactly ts.
func instantOf(t *testing.T, ts float64) time.Time {
	t.Helper()
	n := int64(ts * 1e9)
	for d := int64(0); d < 1024; d++ {
		for _, c := range []int64{n + d, n - d} {
			if tm := time.Unix(0, c); codec.Unix(tm) == ts {
				return tm
			}
		}
	}
	t.Fatalf("no instant has ts %v", ts)
	return time.Time{}
}

// durationOf returns the duration whose Seconds() is exactly s.
func durationOf(t *testing.T, s float64) time.Duration {
	t.Helper()
	n := time.Duration(math.Round(s * 1e9))
	for d := time.Duration(0); d < 16; d++ {
		for _, c := range []time.Duration{n + d, n - d} {
			if c.Seconds() == s {
				return c
			}
		}
	}
	t.Fatalf("no duration has %v seconds", s)
	return 0
}

var uuidText = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestMessagesDocPingPong(t *testing.T) {
	ping, pingNotes := docHexDump(t, "ping")
	pong, pongNotes := docHexDump(t, "pong")
	checkAnnotations(t, "ping", ping, pingNotes)
	checkAnnotations(t, "pong", pong, pongNotes)

	// The ping is what the server's decoder reads.
	var req codec.Request
	if err := codec.DecodeRequest(ping, &req); err != nil {
		t.Fatalf("the documented ping does not decode: %v", err)
	}
	if req.Type != codec.TypePing || req.Version != 1 || string(req.ID) != "6f1c5e0a-6b1e-4a44-9a6c-2f7f3a3b0c11" || !req.HasTS || req.TS != 1795000000.25 {
		t.Fatalf("documented ping decodes as %+v", req)
	}

	// The pong's values, read with a general MessagePack decoder.
	var doc struct {
		ID            string  `msgpack:"id"`
		CorrelationID string  `msgpack:"correlation_id"`
		TS            float64 `msgpack:"ts"`
		Body          struct {
			ServerVersion string  `msgpack:"server_version"`
			ModelVersion  string  `msgpack:"model_version"`
			UptimeSeconds float64 `msgpack:"uptime_seconds"`
		} `msgpack:"body"`
	}
	if err := msgpack.Unmarshal(pong, &doc); err != nil {
		t.Fatalf("the documented pong does not decode: %v", err)
	}
	if doc.CorrelationID != string(req.ID) || !uuidText.MatchString(doc.ID) {
		t.Fatalf("documented pong: id %q, correlation_id %q", doc.ID, doc.CorrelationID)
	}

	// The server, at the pong's instant, with its version, uptime and
	// model, answers the documented ping with the documented pong.
	now := instantOf(t, doc.TS)
	h := channel.New(channel.Options{
		Models:        activeModel{trainedModel(t, doc.Body.ModelVersion)},
		ServerVersion: doc.Body.ServerVersion,
		Started:       now.Add(-durationOf(t, doc.Body.UptimeSeconds)),
		Now:           func() time.Time { return now },
	})
	got := h.Handle(context.Background(), zmtp.Request{Frames: [][]byte{ping}}, nil)

	// Only the reply's own id differs: it is fresh for every reply.
	at := bytes.Index(pong, []byte(doc.ID))
	if len(got) != len(pong) || at < 0 || !uuidText.Match(got[at:at+36]) {
		t.Fatalf("the server's pong differs from messages.md 7.1:\nserver: % x\ndoc:    % x", got, pong)
	}
	copy(got[at:at+36], doc.ID)
	if !bytes.Equal(got, pong) {
		t.Fatalf("the server's pong differs from messages.md 7.1:\nserver: % x\ndoc:    % x", got, pong)
	}
}

// intKeys are the only keys whose values the server writes as integers
// (messages.md 2.1); every other number is float64.
var intKeys = map[string]bool{"v": true, "protocol_version": true, "latent_components": true,
	"trained_samples": true, "wavenumber_count": true}

// formatChecker walks one reply and reports every format messages.md 2.1
// does not list for where it appears.
type formatChecker struct {
	b    []byte
	pos  int
	errs []string
	seen map[string]bool
}

func (c *formatChecker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf("byte %d: ", c.pos)+fmt.Sprintf(format, args...))
}

func (c *formatChecker) need(n int) bool {
	if c.pos+n > len(c.b) {
		c.fail("truncated")
		c.pos = len(c.b)
		return false
	}
	return true
}

func (c *formatChecker) uint(n int) int {
	if !c.need(n) {
		return 0
	}
	v := 0
	for _, x := range c.b[c.pos : c.pos+n] {
		v = v<<8 | int(x)
	}
	c.pos += n
	return v
}

// str reads a str value in fixstr, str8 or str16 form.
func (c *formatChecker) str() (string, bool) {
	if !c.need(1) {
		return "", false
	}
	code := c.b[c.pos]
	c.pos++
	var n int
	switch {
	case code >= 0xa0 && code <= 0xbf:
		n = int(code & 0x1f)
		c.seen["fixstr"] = true
	case code == 0xd9:
		n = c.uint(1)
		c.seen["str8"] = true
		if n < 32 {
			c.fail("str8 for %d bytes: fixstr is shorter", n)
		}
	case code == 0xda:
		n = c.uint(2)
		c.seen["str16"] = true
		if n < 256 {
			c.fail("str16 for %d bytes: str8 is shorter", n)
		}
	default:
		c.pos--
		return "", false
	}
	if !c.need(n) {
		return "", true
	}
	s := string(c.b[c.pos : c.pos+n])
	c.pos += n
	return s, true
}

func (c *formatChecker) value(key string) {
	if !c.need(1) {
		return
	}
	if _, ok := c.str(); ok {
		return
	}
	code := c.b[c.pos]
	c.pos++
	isInt := false
	switch {
	case code <= 0x7f:
		isInt = true
	case code >= 0x80 && code <= 0x8f:
		c.seen["fixmap"] = true
		for range int(code & 0x0f) {
			k, ok := c.str()
			if !ok {
				c.fail("map key is not a str")
				return
			}
			c.value(k)
		}
	case code >= 0x90 && code <= 0x9f:
		c.seen["fixarray"] = true
		c.array(key, int(code&0x0f))
	case code == 0xdc:
		c.seen["array16"] = true
		n := c.uint(2)
		if n < 16 {
			c.fail("array16 for %d entries: fixarray is shorter", n)
		}
		c.array(key, n)
	case code == 0xc0:
		if key != "error" {
			c.fail("nil under %q", key)
		}
	case code == 0xc2 || code == 0xc3:
		if key != "retryable" {
			c.fail("bool under %q", key)
		}
	case code == 0xcb:
		c.seen["float64"] = true
		if intKeys[key] {
			c.fail("float64 under integer key %q", key)
		}
		c.uint(8)
	case code == 0xcc:
		isInt = c.uint(1) >= 128 || c.fail0("uint8 for a value below 128")
	case code == 0xcd:
		c.seen["uint16"] = true
		isInt = c.uint(2) >= 256 || c.fail0("uint16 for a value below 256")
	case code == 0xce:
		isInt = c.uint(4) >= 65536 || c.fail0("uint32 for a value below 65536")
	default:
		c.fail("format 0x%02x (under %q) is not in messages.md 2.1", code, key)
		c.pos = len(c.b)
	}
	if isInt && !intKeys[key] {
		c.fail("integer under %q, which the contract calls a number (float64)", key)
	}
}

// array checks the n entries of an array under key: the two bounds of
// wavenumber_range or of a contribution's region, or the entries of a
// contribution summary's top and regions (maps), or a model_info reply's
// wavenumbers. Entries take the key of their array.
func (c *formatChecker) array(key string, n int) {
	switch key {
	case "wavenumber_range", "region":
		if n != 2 {
			c.fail("%q has %d entries, want 2", key, n)
		}
	case "top", "regions", "wavenumbers":
	default:
		c.fail("array under %q", key)
	}
	for range n {
		c.value(key)
	}
}

func (c *formatChecker) fail0(msg string) bool {
	c.fail("%s", msg)
	return true
}

// request packs a request with a general MessagePack encoder, as a client
// in another language would.
func request(t *testing.T, typ, id string, body map[string]any) []byte {
	t.Helper()
	req := map[string]any{"v": 1, "type": typ, "id": id, "ts": 1795000000.25}
	if body != nil {
		req["body"] = body
	}
	b, err := msgpack.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withContributions is a predict body asking for K contributions.
func withContributions(body map[string]any, k int) map[string]any {
	out := maps.Clone(body)
	out["options"] = map[string]any{"contributions": k}
	return out
}

func TestMessagesDocWireFormats(t *testing.T) {
	wn, in := synth.Axis(), synth.New(synth.Config{Seed: 32}).Next().Intensities
	spectrum := map[string]any{"spectrum": map[string]any{"wavenumbers": wn, "intensities": in}}
	short := map[string]any{"spectrum": map[string]any{"wavenumbers": wn[:100], "intensities": in[:100]}}
	longID := strings.Repeat("x", codec.MaxIDLength)
	loaded := channel.New(channel.Options{Models: activeModel{trainedModel(t, "pls-20261123-125711")}, ServerVersion: "devel"})
	empty := channel.New(channel.Options{Models: activeModel{nil}, ServerVersion: "devel"})

	seen := map[string]bool{}
	for _, tc := range []struct {
		name   string
		h      *channel.Handler
		frames [][]byte
	}{
		{"ping", loaded, [][]byte{request(t, "ping", "6f1c5e0a-6b1e-4a44-9a6c-2f7f3a3b0c11", nil)}},
		{"ping with a 256-byte id", loaded, [][]byte{request(t, "ping", longID, nil)}},
		{"ping without model", empty, [][]byte{request(t, "ping", "p", nil)}},
		{"predict", loaded, [][]byte{request(t, "predict", "a", spectrum)}},
		{"predict, 100 points", loaded, [][]byte{request(t, "predict", "b", short)}},
		{"predict without model", empty, [][]byte{request(t, "predict", "c", spectrum)}},
		{"predict with 20 contributions", loaded, [][]byte{request(t, "predict", "g", withContributions(spectrum, 20))}},
		{"predict with 3 contributions", loaded, [][]byte{request(t, "predict", "h", withContributions(spectrum, 3))}},
		{"model_info", loaded, [][]byte{request(t, "model_info", "d", nil)}},
		{"model_info with the axis", loaded, [][]byte{request(t, "model_info", "i", map[string]any{"include": []string{"wavenumbers"}})}},
		{"model_info without model", empty, [][]byte{request(t, "model_info", "e", nil)}},
		{"unknown type", loaded, [][]byte{request(t, "calibrate", "f", nil)}},
		{"not MessagePack", loaded, [][]byte{[]byte("hello")}},
		{"two body frames", loaded, [][]byte{{0x80}, {0x80}}},
	} {
		reply := tc.h.Handle(context.Background(), zmtp.Request{Frames: tc.frames}, nil)
		c := &formatChecker{b: reply, seen: seen}
		c.value("")
		if c.pos != len(reply) {
			c.fail("%d trailing bytes", len(reply)-c.pos)
		}
		for _, e := range c.errs {
			t.Errorf("%s reply: %s\n% x", tc.name, e, reply)
		}
	}
	// The cases reach every format the table lists.
	for _, f := range []string{"fixmap", "fixarray", "array16", "fixstr", "str8", "str16", "float64", "uint16"} {
		if !seen[f] {
			t.Errorf("no reply used %s: the cases no longer cover messages.md 2.1", f)
		}
	}
}
