// Package wire is ZMTP's wire format (RFC 23, ZMTP 3.0; RFC 37, ZMTP 3.1):
// the greeting, frame headers, commands and their metadata properties. The
// server (package zmtp) and the Go client's CURVE connection (package
// client) both speak it through this package, which imports nothing of
// either.
//
// Every parser checks each length against the bytes present: any input
// either parses or returns one of the errors below; none panics.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Wire constants.
const (
	GreetingSize = 64

	// SignatureSize is the part of the greeting (0xFF, 8 padding bytes, 0x7F) a
	// peer must see before it reveals its version; libzmq waits for it.
	SignatureSize = 10

	// Frame flag bits. Bits 3-7 are reserved and must be zero.
	FlagMore     byte = 0x01
	FlagLong     byte = 0x02
	FlagCommand  byte = 0x04
	FlagReserved byte = 0xF8

	// MaxShortSize is the largest body a short frame (1-byte size) can carry.
	MaxShortSize = 255

	// MaxHeaderSize is the longest frame header: flags and an 8-byte size.
	MaxHeaderSize = 9

	// MaxPingContext is the largest PING/PONG context allowed by RFC 37.
	MaxPingContext = 16

	// MaxErrorReason is the longest ERROR reason (one length octet).
	MaxErrorReason = 255

	// MaxPropertyValue is the largest property value RFC 23 allows (2^31-1).
	MaxPropertyValue = 1<<31 - 1

	// Major and Minor are the version we announce: ZMTP 3.1.
	Major = 3
	Minor = 1
)

// Command names.
const (
	CmdReady = "READY"
	CmdError = "ERROR"
	CmdPing  = "PING"
	CmdPong  = "PONG"
)

// Security mechanisms.
const (
	MechanismNull  = "NULL"
	MechanismCurve = "CURVE"
)

// Errors of the parsers. They are wrapped with context where they occur.
var (
	ErrBadSignature   = errors.New("zmtp: bad greeting signature")
	ErrOldVersion     = errors.New("zmtp: peer speaks a ZMTP version older than 3.0")
	ErrBadMechanism   = errors.New("zmtp: unsupported security mechanism")
	ErrReservedFlags  = errors.New("zmtp: reserved frame flag bits set")
	ErrMalformedCmd   = errors.New("zmtp: malformed command")
	ErrMalformedReady = errors.New("zmtp: malformed READY metadata")
	ErrMalformedPing  = errors.New("zmtp: malformed PING")
)

// Greeting is the part of a peer's 64-byte greeting we use. The padding
// (bytes 1-8) is deliberately not kept: libzmq writes a length there, and RFC 37
// forbids validating it.
type Greeting struct {
	Major, Minor byte
	Mechanism    string // null padding removed
	AsServer     byte
}

// AppendGreeting appends our 64-byte greeting: signature, version 3.1, the
// mechanism, and the as-server flag.
func AppendGreeting(dst []byte, mechanism string, asServer bool) []byte {
	var g [GreetingSize]byte
	g[0] = 0xFF
	g[9] = 0x7F
	g[10] = Major
	g[11] = Minor
	copy(g[12:32], mechanism)
	if asServer {
		g[32] = 1
	}
	return append(dst, g[:]...)
}

// CheckSignature validates the first 10 greeting bytes. Only byte 0 (0xFF) and
// bit 0 of byte 9 are significant; padding bytes 1-8 are ignored (RFC 37).
func CheckSignature(sig []byte) error {
	if len(sig) < SignatureSize || sig[0] != 0xFF || sig[9]&0x01 == 0 {
		return ErrBadSignature
	}
	return nil
}

// ParseGreeting decodes a full 64-byte greeting: the signature, a version of
// 3.0 or later, and a mechanism name followed by null padding only. Which
// mechanism and role are acceptable is the caller's to decide.
func ParseGreeting(b []byte) (Greeting, error) {
	if len(b) != GreetingSize {
		return Greeting{}, fmt.Errorf("zmtp: greeting is %d bytes, want %d: %w", len(b), GreetingSize, ErrBadSignature)
	}
	if err := CheckSignature(b[:SignatureSize]); err != nil {
		return Greeting{}, err
	}
	g := Greeting{Major: b[10], Minor: b[11], AsServer: b[32]}
	if g.Major < 3 {
		return g, fmt.Errorf("zmtp: peer version %d.%d: %w", g.Major, g.Minor, ErrOldVersion)
	}
	mech := b[12:32]
	end := 0
	for end < len(mech) && mech[end] != 0 {
		end++
	}
	g.Mechanism = string(mech[:end])
	// Everything after the name must be null padding; "NULL\x00X..." is not NULL.
	for _, c := range mech[end:] {
		if c != 0 {
			return g, fmt.Errorf("zmtp: mechanism %q has junk after its name: %w", mech, ErrBadMechanism)
		}
	}
	return g, nil
}

// SupportsHeartbeat reports whether the peer speaks ZMTP 3.1 or later, the
// version that introduced PING/PONG. RFC 37: higher versions must be accepted.
func (g Greeting) SupportsHeartbeat() bool {
	return g.Major > 3 || (g.Major == 3 && g.Minor >= 1)
}

// AppendHeader appends the flags and size of a frame with a body of n bytes,
// choosing the short form when the body fits in 255 bytes.
func AppendHeader(dst []byte, flags byte, n int) []byte {
	if n <= MaxShortSize {
		return append(dst, flags, byte(n))
	}
	dst = append(dst, flags|FlagLong)
	return binary.BigEndian.AppendUint64(dst, uint64(n))
}

// ReadSize reads the size that follows a frame's flags byte, short or long
// as the flags say, refusing reserved flag bits first. The caller reads the
// flags itself: the server marks a frame as started there.
func ReadSize(r *bufio.Reader, flags byte) (uint64, error) {
	if flags&FlagReserved != 0 {
		return 0, fmt.Errorf("zmtp: flags %#x: %w", flags, ErrReservedFlags)
	}
	if flags&FlagLong == 0 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("zmtp: read frame size: %w", err)
		}
		return uint64(b), nil
	}
	b, err := r.Peek(8)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("zmtp: read long frame size: %w", err)
	}
	size := binary.BigEndian.Uint64(b)
	_, _ = r.Discard(8) // the 8 bytes are buffered: Peek returned them
	return size, nil
}

// AppendFrame appends one complete frame.
func AppendFrame(dst []byte, flags byte, body []byte) []byte {
	dst = AppendHeader(dst, flags, len(body))
	return append(dst, body...)
}

// AppendCommand appends a command frame: name length, name, data.
func AppendCommand(dst []byte, name string, data []byte) []byte {
	dst = AppendHeader(dst, FlagCommand, 1+len(name)+len(data))
	return AppendCommandBody(dst, name, data)
}

// AppendCommandBody appends a command's body: name length, name, data.
func AppendCommandBody(dst []byte, name string, data []byte) []byte {
	dst = append(dst, byte(len(name)))
	dst = append(dst, name...)
	return append(dst, data...)
}

// AppendErrorCommand appends an ERROR command; the reason is cut to 255 bytes.
func AppendErrorCommand(dst []byte, reason string) []byte {
	return AppendCommand(dst, CmdError, ErrorData(reason))
}

// ErrorData is an ERROR command's data: the reason, cut to 255 bytes, after
// its length.
func ErrorData(reason string) []byte {
	if len(reason) > MaxErrorReason {
		reason = reason[:MaxErrorReason]
	}
	data := make([]byte, 0, 1+len(reason))
	data = append(data, byte(len(reason)))
	return append(data, reason...)
}

// ErrorReason is the reason an ERROR command's data carries, for a message;
// data that does not hold a well-formed reason is returned whole.
func ErrorReason(data []byte) string {
	if len(data) < 1 || int(data[0]) > len(data)-1 {
		return string(data)
	}
	return string(data[1 : 1+int(data[0])])
}

// ParseCommand splits a command body into its name and data, checking the name
// length against the bytes present. RFC 37 requires a 1-255 byte name.
func ParseCommand(body []byte) (name string, data []byte, err error) {
	if len(body) < 1 {
		return "", nil, fmt.Errorf("zmtp: empty command body: %w", ErrMalformedCmd)
	}
	n := int(body[0])
	if n == 0 || n > len(body)-1 {
		return "", nil, fmt.Errorf("zmtp: command name length %d with %d bytes left: %w", n, len(body)-1, ErrMalformedCmd)
	}
	return string(body[1 : 1+n]), body[1+n:], nil
}

// ParsePing decodes a PING command's data: a 2-byte TTL in tenths of a second,
// then a context of at most 16 bytes (RFC 37).
func ParsePing(data []byte) (ttlDeciseconds uint16, context []byte, err error) {
	if len(data) < 2 {
		return 0, nil, fmt.Errorf("zmtp: PING with %d data bytes: %w", len(data), ErrMalformedPing)
	}
	if len(data)-2 > MaxPingContext {
		return 0, nil, fmt.Errorf("zmtp: PING context of %d bytes: %w", len(data)-2, ErrMalformedPing)
	}
	return binary.BigEndian.Uint16(data[:2]), data[2:], nil
}

// Property is one metadata entry (READY, or CURVE's INITIATE and READY).
type Property struct {
	Name  string
	Value []byte
}

// AppendProperties encodes metadata: name length (1 byte), name, value
// length (4 bytes big-endian), value. Names must be 1-255 bytes.
func AppendProperties(dst []byte, props []Property) []byte {
	for _, p := range props {
		dst = append(dst, byte(len(p.Name)))
		dst = append(dst, p.Name...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	return dst
}

// ParseProperties decodes metadata. Every length is checked against the
// bytes that remain, so any input either parses or returns ErrMalformedReady;
// it never panics. The returned values alias data.
func ParseProperties(data []byte) ([]Property, error) {
	var props []Property
	rest := data
	for len(rest) > 0 {
		nameLen := int(rest[0])
		rest = rest[1:]
		if nameLen == 0 {
			return nil, fmt.Errorf("zmtp: zero-length property name: %w", ErrMalformedReady)
		}
		if nameLen > len(rest) {
			return nil, fmt.Errorf("zmtp: property name length %d with %d bytes left: %w", nameLen, len(rest), ErrMalformedReady)
		}
		name := string(rest[:nameLen])
		rest = rest[nameLen:]
		if len(rest) < 4 {
			return nil, fmt.Errorf("zmtp: property %q has a truncated value length: %w", name, ErrMalformedReady)
		}
		valueLen := uint64(binary.BigEndian.Uint32(rest[:4]))
		rest = rest[4:]
		if valueLen > MaxPropertyValue || valueLen > uint64(len(rest)) {
			return nil, fmt.Errorf("zmtp: property %q value length %d with %d bytes left: %w", name, valueLen, len(rest), ErrMalformedReady)
		}
		props = append(props, Property{Name: name, Value: rest[:valueLen:valueLen]})
		rest = rest[valueLen:]
	}
	return props, nil
}

// LookupProperty returns the value of the first property whose name matches
// case-insensitively (RFC 37: metadata names are case-insensitive).
func LookupProperty(props []Property, name string) ([]byte, bool) {
	for _, p := range props {
		if strings.EqualFold(p.Name, name) {
			return p.Value, true
		}
	}
	return nil, false
}
