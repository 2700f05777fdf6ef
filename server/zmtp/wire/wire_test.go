package wire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// FuzzParseProperties: any metadata a peer sends either parses or is
// refused with ErrMalformedReady; every value found lies inside the input,
// and what parses encodes back to the same bytes.
func FuzzParseProperties(f *testing.F) {
	f.Add(AppendProperties(nil, []Property{{Name: "Socket-Type", Value: []byte("REP")}}))
	f.Add(AppendProperties(nil, []Property{{Name: "Identity"}, {Name: "socket-type", Value: []byte("ROUTER")}}))
	f.Add([]byte{11, 'S', 'o', 'c', 'k', 'e', 't', '-', 'T', 'y', 'p', 'e', 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, meta []byte) {
		props, err := ParseProperties(meta)
		if err != nil {
			if !errors.Is(err, ErrMalformedReady) || props != nil {
				t.Fatalf("%d properties and error %v", len(props), err)
			}
			return
		}
		if v, ok := LookupProperty(props, "Socket-Type"); ok && len(v) > len(meta) {
			t.Fatalf("a %d-byte value from %d bytes", len(v), len(meta))
		}
		if back := AppendProperties(nil, props); !bytes.Equal(back, meta) {
			t.Fatalf("%q encodes back as %q", meta, back)
		}
	})
}

// FuzzReadSize: whatever follows a flags byte, the size reader returns the
// size the header encodes, or an error; reserved bits are always refused.
func FuzzReadSize(f *testing.F) {
	f.Add(AppendHeader(nil, FlagCommand, 3))
	f.Add(AppendHeader(nil, 0, 300))
	f.Add([]byte{FlagLong, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{FlagLong, 0, 0, 0})
	f.Add([]byte{0x08, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		size, err := ReadSize(bufio.NewReader(bytes.NewReader(data[1:])), data[0])
		if data[0]&FlagReserved != 0 {
			if !errors.Is(err, ErrReservedFlags) {
				t.Fatalf("flags %#x: %v", data[0], err)
			}
			return
		}
		if err != nil {
			return
		}
		if size > 1<<40 || size <= MaxShortSize != (data[0]&FlagLong == 0) {
			return // a header AppendHeader would not write
		}
		if back := AppendHeader(nil, data[0]&^FlagLong, int(size)); !bytes.Equal(back, data[:len(back)]) {
			t.Fatalf("%x read as size %d, which encodes as %x", data, size, back)
		}
	})
}

// FuzzParseGreeting: any 64 bytes either parse or are refused with one
// of the greeting errors; a greeting we write parses back to itself.
func FuzzParseGreeting(f *testing.F) {
	f.Add(AppendGreeting(nil, MechanismNull, false))
	f.Add(AppendGreeting(nil, MechanismCurve, true))
	junk := AppendGreeting(nil, MechanismNull, false)
	junk[17] = 'X'
	f.Add(junk)
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGreeting(b)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrOldVersion) && !errors.Is(err, ErrBadMechanism) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(g.Mechanism) > 20 || g.Major < 3 {
			t.Fatalf("accepted %+v", g)
		}
	})
}

func TestGreetingRoundTrip(t *testing.T) {
	for _, asServer := range []bool{false, true} {
		g, err := ParseGreeting(AppendGreeting(nil, MechanismCurve, asServer))
		if err != nil {
			t.Fatal(err)
		}
		if g.Mechanism != MechanismCurve || g.Major != Major || g.Minor != Minor || (g.AsServer == 1) != asServer || !g.SupportsHeartbeat() {
			t.Fatalf("as-server %v: parsed %+v", asServer, g)
		}
	}
}

func TestReadSizeLong(t *testing.T) {
	hdr := AppendHeader(nil, FlagMore, 1<<20)
	size, err := ReadSize(bufio.NewReader(bytes.NewReader(hdr[1:])), hdr[0])
	if err != nil || size != 1<<20 {
		t.Fatalf("size %d, %v", size, err)
	}
}

func TestCommandAndPing(t *testing.T) {
	frame := AppendCommand(nil, CmdPing, []byte{0, 50, 'c', 't', 'x'})
	if frame[0] != FlagCommand || int(frame[1]) != len(frame)-2 {
		t.Fatalf("header %x", frame[:2])
	}
	name, data, err := ParseCommand(frame[2:])
	if err != nil || name != CmdPing {
		t.Fatalf("%q, %v", name, err)
	}
	ttl, ctx, err := ParsePing(data)
	if err != nil || ttl != 50 || string(ctx) != "ctx" {
		t.Fatalf("ttl %d, context %q, %v", ttl, ctx, err)
	}
	if _, _, err := ParsePing(make([]byte, 2+MaxPingContext+1)); !errors.Is(err, ErrMalformedPing) {
		t.Fatalf("a 17-byte context: %v", err)
	}
	if _, _, err := ParseCommand([]byte{9, 'R'}); !errors.Is(err, ErrMalformedCmd) {
		t.Fatalf("a name longer than the body: %v", err)
	}
	if got := ErrorReason(ErrorData("no")); got != "no" {
		t.Fatalf("ErrorReason(ErrorData(no)) = %q", got)
	}
}
