package zmtp

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A CURVE HELLO costs the server two Curve25519 operations before it knows
// anything about the peer, and anyone with the server's public key may
// send one. A flood of them from a few threads takes the cores the
// replies need. helloLimiter answers at most HelloRate HELLOs a second
// from each source address (IPv6: each /64, which one host usually
// holds whole), with bursts of HelloBurst; a HELLO beyond that gets
// ERROR "300" (the ZAP code for a temporary failure, after which libzmq
// reconnects on its own) and its connection is closed, at the cost of
// reading the HELLO only.
//
// The table of addresses is bounded (maxHelloSources): an address whose
// bucket has refilled is forgotten by housekeeping, and while the table is
// full of active addresses, newcomers share one overflow bucket of the
// same rate. The limit is per address: it does not stop a flood from
// many addresses, which the connection cap and the handshake deadline
// bound instead.

// Defaults of CurveConfig's HELLO limit.
const (
	DefaultHelloRate  = 20 // HELLOs a second from one source address
	DefaultHelloBurst = 40
)

// maxHelloSources bounds the source addresses the limiter remembers.
const maxHelloSources = 4096

// helloTemporaryFailure is the ERROR reason for a HELLO beyond the limit.
const helloTemporaryFailure = "300"

type helloLimiter struct {
	limit rate.Limit
	burst int

	mu       sync.Mutex
	sources  map[netip.Prefix]*rate.Limiter
	overflow *rate.Limiter
}

// newHelloLimiter limits HELLOs to perSecond (with burst) per source;
// nil when perSecond is negative (no limit).
func newHelloLimiter(perSecond float64, burst int) *helloLimiter {
	if perSecond < 0 {
		return nil
	}
	return &helloLimiter{
		limit:    rate.Limit(perSecond),
		burst:    burst,
		sources:  make(map[netip.Prefix]*rate.Limiter),
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst),
	}
}

// allow reports whether a HELLO from addr may be answered now.
func (h *helloLimiter) allow(addr net.Addr, now time.Time) bool {
	key, ok := sourceKey(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		return h.overflow.AllowN(now, 1)
	}
	l := h.sources[key]
	if l == nil {
		if len(h.sources) >= maxHelloSources {
			return h.overflow.AllowN(now, 1)
		}
		l = rate.NewLimiter(h.limit, h.burst)
		h.sources[key] = l
	}
	return l.AllowN(now, 1)
}

// exhausted reports whether addr has no HELLO left now: the accept loop
// then closes its connection at once, before a goroutine, a greeting or a
// read, so that a flood from one address costs the server its accepts
// only. It takes nothing from the bucket.
func (h *helloLimiter) exhausted(addr net.Addr, now time.Time) bool {
	key, ok := sourceKey(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.overflow
	if ok {
		if l = h.sources[key]; l == nil {
			return false
		}
	}
	return l.TokensAt(now) < 1
}

// forgetIdle drops the sources whose bucket has refilled: they would
// start a new one just as full.
func (h *helloLimiter) forgetIdle(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, l := range h.sources {
		if l.TokensAt(now) >= float64(h.burst) {
			delete(h.sources, key)
		}
	}
}

// size is how many sources the limiter remembers.
func (h *helloLimiter) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sources)
}

// sourceKey is the prefix addr is limited by: the address itself for
// IPv4, its /64 for IPv6.
func sourceKey(addr net.Addr) (netip.Prefix, bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}
