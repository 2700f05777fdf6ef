package zmtp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Wire constants from RFC 23 (ZMTP 3.0) and RFC 37 (ZMTP 3.1).
const (
	greetingSize = 64

	// signatureSize is the part of the greeting (0xFF, 8 padding bytes, 0x7F) a
	// peer must see before it reveals its version; libzmq waits for it.
	signatureSize = 10

	// Frame flag bits. Bits 3-7 are reserved and must be zero.
	flagMore     byte = 0x01
	flagLong     byte = 0x02
	flagCommand  byte = 0x04
	flagReserved byte = 0xF8

	// maxShortSize is the largest body a short frame (1-byte size) can carry.
	maxShortSize = 255

	// maxPingContext is the largest PING/PONG context allowed by RFC 37.
	maxPingContext = 16

	// maxErrorReason is the longest ERROR reason (one length octet).
	maxErrorReason = 255

	// maxPropertyValue is the largest READY property value RFC 23 allows (2^31-1).
	maxPropertyValue = 1<<31 - 1

	// ourMajor and ourMinor are the version we announce: ZMTP 3.1.
	ourMajor = 3
	ourMinor = 1
)

// Command names.
const (
	cmdReady = "READY"
	cmdError = "ERROR"
	cmdPing  = "PING"
	cmdPong  = "PONG"
)

// Security mechanisms: NULL by default, CURVE when Config.Curve is set.
const (
	mechanismNull  = "NULL"
	mechanismCurve = "CURVE"
)

// Sentinel errors of the wire parsers. They are wrapped with context where they occur.
var (
	errBadSignature    = errors.New("zmtp: bad greeting signature")
	errOldVersion      = errors.New("zmtp: peer speaks a ZMTP version older than 3.0")
	errBadMechanism    = errors.New("zmtp: unsupported security mechanism")
	errReservedFlags   = errors.New("zmtp: reserved frame flag bits set")
	errMalformedCmd    = errors.New("zmtp: malformed command")
	errMalformedReady  = errors.New("zmtp: malformed READY metadata")
	errMalformedPing   = errors.New("zmtp: malformed PING")
	errCommandTooLarge = errors.New("zmtp: command frame too large")
)

// greeting is the part of a peer's 64-byte greeting we use. The padding
// (bytes 1-8) is deliberately not kept: libzmq writes a length there, and RFC 37
// forbids validating it.
type greeting struct {
	major, minor byte
	mechanism    string // null padding removed
	asServer     byte
}

// appendGreeting appends our 64-byte greeting: signature, version 3.1, the
// mechanism, and as-server (1 for CURVE, whose server role we take; 0 for
// NULL, which has no roles).
func appendGreeting(dst []byte, mechanism string) []byte {
	var g [greetingSize]byte
	g[0] = 0xFF
	g[9] = 0x7F
	g[10] = ourMajor
	g[11] = ourMinor
	copy(g[12:32], mechanism)
	if mechanism == mechanismCurve {
		g[32] = 1
	}
	return append(dst, g[:]...)
}

// checkSignature validates the first 10 greeting bytes. Only byte 0 (0xFF) and
// bit 0 of byte 9 are significant; padding bytes 1-8 are ignored (RFC 37).
func checkSignature(sig []byte) error {
	if len(sig) < signatureSize || sig[0] != 0xFF || sig[9]&0x01 == 0 {
		return errBadSignature
	}
	return nil
}

// parseGreeting decodes a full 64-byte greeting whose mechanism must be
// want. A CURVE peer must not claim the server role, which is ours.
func parseGreeting(b []byte, want string) (greeting, error) {
	if len(b) != greetingSize {
		return greeting{}, fmt.Errorf("zmtp: greeting is %d bytes, want %d: %w", len(b), greetingSize, errBadSignature)
	}
	if err := checkSignature(b[:signatureSize]); err != nil {
		return greeting{}, err
	}
	g := greeting{major: b[10], minor: b[11], asServer: b[32]}
	if g.major < 3 {
		return g, fmt.Errorf("zmtp: peer version %d.%d: %w", g.major, g.minor, errOldVersion)
	}
	mech := b[12:32]
	end := 0
	for end < len(mech) && mech[end] != 0 {
		end++
	}
	g.mechanism = string(mech[:end])
	// Everything after the name must be null padding; "NULL\x00X..." is not NULL.
	for _, c := range mech[end:] {
		if c != 0 {
			return g, fmt.Errorf("zmtp: mechanism %q has junk after its name: %w", mech, errBadMechanism)
		}
	}
	if g.mechanism != want {
		return g, fmt.Errorf("zmtp: peer mechanism %q, want %s: %w", g.mechanism, want, errBadMechanism)
	}
	if want == mechanismCurve && g.asServer != 0 {
		return g, fmt.Errorf("zmtp: CURVE peer claims the server role: %w", errBadMechanism)
	}
	return g, nil
}

// supportsHeartbeat reports whether the peer speaks ZMTP 3.1 or later, the
// version that introduced PING/PONG. RFC 37: higher versions must be accepted.
func (g greeting) supportsHeartbeat() bool {
	return g.major > 3 || (g.major == 3 && g.minor >= 1)
}

// appendFrameHeader appends the flags and size of a frame with a body of n bytes,
// choosing the short form when the body fits in 255 bytes.
func appendFrameHeader(dst []byte, flags byte, n int) []byte {
	if n <= maxShortSize {
		return append(dst, flags, byte(n))
	}
	dst = append(dst, flags|flagLong)
	return binary.BigEndian.AppendUint64(dst, uint64(n))
}

// appendFrame appends one complete frame.
func appendFrame(dst []byte, flags byte, body []byte) []byte {
	dst = appendFrameHeader(dst, flags, len(body))
	return append(dst, body...)
}

// appendCommand appends a command frame: name length, name, data.
func appendCommand(dst []byte, name string, data []byte) []byte {
	dst = appendFrameHeader(dst, flagCommand, 1+len(name)+len(data))
	return appendCommandBody(dst, name, data)
}

// appendCommandBody appends a command's body: name length, name, data.
func appendCommandBody(dst []byte, name string, data []byte) []byte {
	dst = append(dst, byte(len(name)))
	dst = append(dst, name...)
	return append(dst, data...)
}

// appendErrorCommand appends an ERROR command; the reason is cut to 255 bytes.
func appendErrorCommand(dst []byte, reason string) []byte {
	return appendCommand(dst, cmdError, errorData(reason))
}

// errorData is an ERROR command's data: the reason, cut to 255 bytes, after
// its length.
func errorData(reason string) []byte {
	if len(reason) > maxErrorReason {
		reason = reason[:maxErrorReason]
	}
	data := make([]byte, 0, 1+len(reason))
	data = append(data, byte(len(reason)))
	return append(data, reason...)
}

// property is one READY metadata entry.
type property struct {
	name  string
	value []byte
}

// appendProperties encodes READY metadata: name length (1 byte), name, value
// length (4 bytes big-endian), value. Names must be 1-255 bytes.
func appendProperties(dst []byte, props []property) []byte {
	for _, p := range props {
		dst = append(dst, byte(len(p.name)))
		dst = append(dst, p.name...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p.value)))
		dst = append(dst, p.value...)
	}
	return dst
}

// parseCommand splits a command body into its name and data, checking the name
// length against the bytes present. RFC 37 requires a 1-255 byte name.
func parseCommand(body []byte) (name string, data []byte, err error) {
	if len(body) < 1 {
		return "", nil, fmt.Errorf("zmtp: empty command body: %w", errMalformedCmd)
	}
	n := int(body[0])
	if n == 0 || n > len(body)-1 {
		return "", nil, fmt.Errorf("zmtp: command name length %d with %d bytes left: %w", n, len(body)-1, errMalformedCmd)
	}
	return string(body[1 : 1+n]), body[1+n:], nil
}

// parseProperties decodes READY metadata. Every length is checked against the
// bytes that remain, so any input either parses or returns errMalformedReady;
// it never panics. The returned values alias data.
func parseProperties(data []byte) ([]property, error) {
	var props []property
	rest := data
	for len(rest) > 0 {
		nameLen := int(rest[0])
		rest = rest[1:]
		if nameLen == 0 {
			return nil, fmt.Errorf("zmtp: zero-length property name: %w", errMalformedReady)
		}
		if nameLen > len(rest) {
			return nil, fmt.Errorf("zmtp: property name length %d with %d bytes left: %w", nameLen, len(rest), errMalformedReady)
		}
		name := string(rest[:nameLen])
		rest = rest[nameLen:]
		if len(rest) < 4 {
			return nil, fmt.Errorf("zmtp: property %q has a truncated value length: %w", name, errMalformedReady)
		}
		valueLen := uint64(binary.BigEndian.Uint32(rest[:4]))
		rest = rest[4:]
		if valueLen > maxPropertyValue || valueLen > uint64(len(rest)) {
			return nil, fmt.Errorf("zmtp: property %q value length %d with %d bytes left: %w", name, valueLen, len(rest), errMalformedReady)
		}
		props = append(props, property{name: name, value: rest[:valueLen:valueLen]})
		rest = rest[valueLen:]
	}
	return props, nil
}

// lookupProperty returns the value of the first property whose name matches
// case-insensitively (RFC 37: metadata names are case-insensitive).
func lookupProperty(props []property, name string) ([]byte, bool) {
	for _, p := range props {
		if strings.EqualFold(p.name, name) {
			return p.value, true
		}
	}
	return nil, false
}

// compatibleWithREP reports whether a peer socket type may talk to a REP
// socket: REQ and DEALER, as RFC 28's table allows. Every other type
// (ROUTER included) is refused with an ERROR command.
func compatibleWithREP(socketType []byte) bool {
	for _, ok := range [...]string{"REQ", "DEALER"} {
		if strings.EqualFold(string(socketType), ok) {
			return true
		}
	}
	return false
}

// parsePing decodes a PING command's data: a 2-byte TTL in tenths of a second,
// then a context of at most 16 bytes (RFC 37).
func parsePing(data []byte) (ttlDeciseconds uint16, context []byte, err error) {
	if len(data) < 2 {
		return 0, nil, fmt.Errorf("zmtp: PING with %d data bytes: %w", len(data), errMalformedPing)
	}
	if len(data)-2 > maxPingContext {
		return 0, nil, fmt.Errorf("zmtp: PING context of %d bytes: %w", len(data)-2, errMalformedPing)
	}
	return binary.BigEndian.Uint16(data[:2]), data[2:], nil
}
