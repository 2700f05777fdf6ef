package curve

import "sync/atomic"

// Allowlist is a set of client public keys that can be replaced while
// handshakes consult it (SIGHUP reload): Replace swaps the whole set
// atomically, so a handshake sees either the old set or the new one. Its
// Allowed method is what a server's allow function should be.
//
// A map lookup's timing depends on the key, but the lookup happens only
// after the client has proved that it holds the key's secret half, so it
// tells an attacker nothing about keys it does not already own.
type Allowlist struct {
	keys atomic.Pointer[map[PublicKey]struct{}]
}

// NewAllowlist returns an allowlist holding keys.
func NewAllowlist(keys []PublicKey) *Allowlist {
	a := &Allowlist{}
	a.Replace(keys)
	return a
}

// Replace makes keys the allowed set.
func (a *Allowlist) Replace(keys []PublicKey) {
	set := make(map[PublicKey]struct{}, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	a.keys.Store(&set)
}

// Allowed reports whether k is in the set.
func (a *Allowlist) Allowed(k PublicKey) bool {
	set := a.keys.Load()
	if set == nil {
		return false
	}
	_, ok := (*set)[k]
	return ok
}

// Len is the number of distinct keys.
func (a *Allowlist) Len() int {
	set := a.keys.Load()
	if set == nil {
		return 0
	}
	return len(*set)
}
