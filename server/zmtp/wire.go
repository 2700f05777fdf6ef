package zmtp

import (
	"errors"
	"fmt"
	"strings"

	"ramanserve/server/zmtp/wire"
)

// The wire format itself is package wire; this file holds what only the
// server side decides: which greetings and peers it accepts.

// errCommandTooLarge: a command frame beyond MaxCommandSize.
var errCommandTooLarge = errors.New("zmtp: command frame too large")

// parseGreeting decodes a full 64-byte greeting whose mechanism must be
// want. A CURVE peer must not claim the server role, which is ours.
func parseGreeting(b []byte, want string) (wire.Greeting, error) {
	g, err := wire.ParseGreeting(b)
	if err != nil {
		return g, err
	}
	if g.Mechanism != want {
		return g, fmt.Errorf("zmtp: peer mechanism %q, want %s: %w", g.Mechanism, want, wire.ErrBadMechanism)
	}
	if want == wire.MechanismCurve && g.AsServer != 0 {
		return g, fmt.Errorf("zmtp: CURVE peer claims the server role: %w", wire.ErrBadMechanism)
	}
	return g, nil
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
