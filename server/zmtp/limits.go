package zmtp

import (
	"errors"
	"sync/atomic"
	"time"
)

// This file holds what bounds a connection's claim on the server: the
// connection's state as other goroutines see it (for eviction and the
// partial-message deadline), the coarse clock that stamps it, and the pool
// of bytes shared by messages larger than a connection's own allowance.

// errClosedByServer is what a session sees when another goroutine closed it:
// evicted at the connection cap, or cut by the partial-message deadline.
var errClosedByServer = errors.New("zmtp: connection closed by the server")

// Connection phases, in the low bits of a session's state word.
const (
	phaseIdle      uint64 = iota // between messages (or greeting): nothing of the peer's is held
	phaseReceiving               // the first byte of a frame arrived; the message is incomplete
	phaseHandling                // the message is complete; the handler runs or the reply is written
	phaseClosed                  // another goroutine closed the connection; the high bits hold the reason

	phaseMask  uint64 = 3
	servedBit  uint64 = 1 << 2 // the peer has had at least one reply
	stampShift        = 3      // the coarse clock (ms) lives above the flags
)

// Why another goroutine closed a connection, stored in a closed state word.
const (
	closedEvicted      uint64 = 1
	closedFrameTimeout uint64 = 2
)

func phaseOf(w uint64) uint64      { return w & phaseMask }
func stampOf(w uint64) int64       { return int64(w >> stampShift) }
func closedWord(why uint64) uint64 { return why<<stampShift | phaseClosed }

// stateWord packs a phase, the served flag and a coarse timestamp: when the
// phase began (idle: the peer's last activity; receiving: when the message's
// first byte arrived).
func stateWord(phase uint64, served bool, stampMs int64) uint64 {
	w := uint64(stampMs)<<stampShift | phase
	if served {
		w |= servedBit
	}
	return w
}

// shared is the state all sessions of one server share.
type shared struct {
	epoch time.Time
	nowMs atomic.Int64 // milliseconds since epoch, advanced by the housekeeper

	// partialLimit caps partialUsed: bytes of message buffers beyond each
	// connection's own allowance (ownBufferSize), reserved before they are
	// allocated and released once the reply is written.
	partialLimit int64
	partialUsed  atomic.Int64
}

func newShared(cfg Config) *shared {
	return &shared{epoch: time.Now(), partialLimit: cfg.MaxPartialBytes}
}

// now is the coarse clock: an atomic load, cheap enough for every message.
func (sh *shared) now() int64 { return sh.nowMs.Load() }

// tick advances the coarse clock to the wall clock.
func (sh *shared) tick() { sh.nowMs.Store(time.Since(sh.epoch).Milliseconds()) }

// reserve takes n bytes from the partial-message pool, or reports that the
// pool cannot spare them.
func (sh *shared) reserve(n int64) bool {
	if sh.partialUsed.Add(n) > sh.partialLimit {
		sh.partialUsed.Add(-n)
		return false
	}
	return true
}

func (sh *shared) release(n int64) {
	if n != 0 {
		sh.partialUsed.Add(-n)
	}
}

// housekeepInterval is how often the coarse clock advances and partial
// messages are checked against Config.FrameTimeout.
func housekeepInterval(frameTimeout time.Duration) time.Duration {
	return min(100*time.Millisecond, max(frameTimeout/4, 5*time.Millisecond))
}

// housekeep advances the clock and cuts connections whose message has been
// incomplete for longer than FrameTimeout, until the server stops accepting.
func (s *Server) housekeep() {
	interval := housekeepInterval(s.cfg.FrameTimeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	// A stamp may be up to one interval older than the byte it marks, so
	// one interval is added: a message is never cut before FrameTimeout,
	// and at most two intervals after.
	limit := (s.cfg.FrameTimeout + interval).Milliseconds()
	var expired []*session
	for {
		select {
		case <-s.stopped:
			return
		case <-t.C:
		}
		s.shared.tick()
		if s.hellos != nil {
			s.hellos.forgetIdle(time.Now())
		}
		expired = s.cutStalled(s.shared.now(), limit, expired[:0])
		clear(expired)
	}
}

// cutStalled closes the connections whose message has been incomplete for
// more than limit ms. The walk is over all connections but runs a few times
// a second, never per message; the closing happens outside the lock.
func (s *Server) cutStalled(now, limit int64, expired []*session) []*session {
	s.mu.Lock()
	for sess := range s.sessions {
		w := sess.state.Load()
		if phaseOf(w) == phaseReceiving && now-stampOf(w) > limit &&
			sess.state.CompareAndSwap(w, closedWord(closedFrameTimeout)) {
			expired = append(expired, sess)
		}
	}
	s.mu.Unlock()
	for _, sess := range expired {
		s.counters.frameTimeouts.Add(1)
		s.log.Debug("zmtp: message incomplete past the frame timeout, connection closed",
			"remote", sess.conn.RemoteAddr().String(), "frame_timeout", s.cfg.FrameTimeout)
		_ = sess.conn.Close()
	}
	return expired
}

// evictLocked makes room at the connection cap: it closes the connection
// that is the safest to lose and reports whether one was found. Called with
// s.mu held, only when the table is full, so the walk over all connections
// is paid on admission, never per message.
func (s *Server) evictLocked() bool {
	now := s.shared.now()
	for range 3 { // a candidate may start a message under our feet; look again
		victim, w := s.evictionCandidateLocked(now)
		if victim == nil {
			return false
		}
		if !victim.state.CompareAndSwap(w, closedWord(closedEvicted)) {
			continue
		}
		delete(s.sessions, victim)
		s.counters.evictions.Add(1)
		s.log.Debug("zmtp: connection evicted at the connection cap",
			"remote", victim.conn.RemoteAddr().String(), "served", w&servedBit != 0,
			"silent_ms", now-stampOf(w))
		_ = victim.conn.Close()
		return true
	}
	return false
}

// evictionCandidateLocked returns the connection to evict and the state word
// it was chosen on, or nil when no connection may be evicted.
//
// Never evicted: a connection in the middle of a message or a request, one
// whose latest PING is within its TTL (pingProtection when the PING carried
// none), and one that has had a reply within EvictableAfter. Among the
// rest, peers that never had a reply go first, then the longest silent,
// then the earliest admitted (the clock is coarse).
func (s *Server) evictionCandidateLocked(now int64) (*session, uint64) {
	protect := s.cfg.EvictableAfter.Milliseconds()
	var victim *session
	var victimWord uint64
	var victimKey evictionKey
	for sess := range s.sessions {
		w := sess.state.Load()
		if phaseOf(w) != phaseIdle || now < sess.heartbeatUntil.Load() {
			continue
		}
		served := w&servedBit != 0
		if served && now-stampOf(w) < protect {
			continue
		}
		key := evictionKey{served: served, stamp: stampOf(w), seq: sess.seq}
		if victim == nil || key.before(victimKey) {
			victim, victimWord, victimKey = sess, w, key
		}
	}
	return victim, victimWord
}

// evictionKey orders eviction candidates: the smallest goes first.
type evictionKey struct {
	served bool
	stamp  int64
	seq    uint64
}

func (k evictionKey) before(o evictionKey) bool {
	if k.served != o.served {
		return !k.served
	}
	if k.stamp != o.stamp {
		return k.stamp < o.stamp
	}
	return k.seq < o.seq
}
