// Package live hands each predict's outcome from the prediction channel's
// hot path to the publishers of live values (the OPC UA server), without
// ever making a reply wait.
//
// The hand-off is a mailbox of slots, one for the whole channel and one
// per source (a context.port, or a spectrometer channel when the request
// names no port). Offer copies an outcome into its slots under a short
// lock and returns; the publisher takes every slot that changed since it
// last looked. A slot that is overwritten before the publisher took it is
// coalesced: the latest outcome wins and the overwritten one is counted.
// Sources beyond MaxSources are counted and dropped, so no client can
// make the mailbox grow.
package live

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/inference"
)

// DefaultMaxSources bounds the per-source slots: a rig has a handful of
// ports, and a client inventing port names must not grow the server.
const DefaultMaxSources = 32

// Outcome is one predict's result as the publishers show it. It holds no
// pointers into the request, so Offer can copy it.
type Outcome struct {
	// Source is the spectrum's time: the request's ts when it is within
	// MaxClockSkew of the receipt, otherwise the receipt.
	Source time.Time
	// Replied is when the reply was ready.
	Replied time.Time
	// ModelVersion is the model that answered (empty when none was loaded).
	ModelVersion string
	// Failed: the predict was refused or failed; ErrorCode says why (the
	// channel's error code, for example INVALID_SPECTRUM). Prediction is
	// then unset.
	Failed     bool
	ErrorCode  string
	Prediction inference.Prediction
}

// MaxClockSkew bounds how far a request's ts may be from the server's
// receipt to be taken as the spectrum's time: a rig whose clock is wrong
// by more than this gets the receipt time instead, so a bad clock cannot
// put values into another day.
const MaxClockSkew = 10 * time.Minute

// SourceTime returns the spectrum's time for a request received at
// received that carried ts (seconds since the epoch; hasTS false when
// absent).
func SourceTime(received time.Time, ts float64, hasTS bool) time.Time {
	if !hasTS || ts != ts || ts <= 0 || ts > 1e11 {
		return received
	}
	sec := int64(ts)
	t := time.Unix(sec, int64((ts-float64(sec))*1e9))
	if d := t.Sub(received); d > MaxClockSkew || d < -MaxClockSkew {
		return received
	}
	return t
}

// SourceName is the name of a request's source: its port when it names
// one, "channel-N" for a spectrometer channel, "" for neither (the
// outcome then goes to the channel-wide slot only).
func SourceName(port string, hasPort bool, channel float64, hasChannel bool) string {
	switch {
	case hasPort && port != "":
		return port
	case hasChannel && channel == channel && channel >= 0 && channel < 1e6:
		if n := int(channel); n < len(channelNames) {
			return channelNames[n] // no allocation on the hot path
		}
		return "channel-" + strconv.FormatInt(int64(channel), 10)
	}
	return ""
}

// channelNames are the names of the spectrometer channels a rig has.
var channelNames = func() [64]string {
	var names [64]string
	for i := range names {
		names[i] = "channel-" + strconv.Itoa(i)
	}
	return names
}()

// Slot is one source's latest outcome, as the publisher takes it.
type Slot struct {
	Source  string // "" for the channel-wide slot
	Outcome Outcome
}

// Stats are the mailbox's counters.
type Stats struct {
	Offered        uint64 // outcomes offered
	Coalesced      uint64 // slot values overwritten before they were taken
	SourcesDropped uint64 // outcomes of sources beyond the bound (their per-source slot only)
}

// Feed is the mailbox. Its zero value is not usable; use NewFeed.
type Feed struct {
	maxSources int
	ready      chan struct{} // one token: something changed

	mu      sync.Mutex
	all     slot
	sources map[string]*slot
	order   []string // sources in the order first seen

	offered, coalesced, dropped atomic.Uint64
}

type slot struct {
	dirty   bool
	outcome Outcome
}

// NewFeed returns a mailbox with at most maxSources per-source slots (0:
// DefaultMaxSources).
func NewFeed(maxSources int) *Feed {
	if maxSources <= 0 {
		maxSources = DefaultMaxSources
	}
	return &Feed{maxSources: maxSources, ready: make(chan struct{}, 1), sources: make(map[string]*slot)}
}

// Offer stores o as the latest outcome of the channel and of source (""
// for none). It never blocks on the publisher: it takes a lock held only
// for slot copies, and allocates only for a source it has not seen. o is
// copied; the caller keeps it.
func (f *Feed) Offer(source string, o *Outcome) {
	f.offered.Add(1)
	f.mu.Lock()
	f.put(&f.all, o)
	if source != "" {
		s, ok := f.sources[source]
		if !ok && len(f.sources) < f.maxSources {
			s = &slot{}
			f.sources[source] = s
			f.order = append(f.order, source)
			ok = true
		}
		if ok {
			f.put(s, o)
		} else {
			f.dropped.Add(1)
		}
	}
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *Feed) put(s *slot, o *Outcome) {
	if s.dirty {
		f.coalesced.Add(1)
	}
	s.outcome = *o
	s.dirty = true
}

// Ready is signalled after an Offer; the publisher then calls Take.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Take appends to dst the slots that changed since the last Take, the
// channel-wide slot first and then the sources in the order they were
// first seen, and marks them taken.
func (f *Feed) Take(dst []Slot) []Slot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.all.dirty {
		dst = append(dst, Slot{Outcome: f.all.outcome})
		f.all.dirty = false
	}
	for _, name := range f.order {
		s := f.sources[name]
		if s.dirty {
			dst = append(dst, Slot{Source: name, Outcome: s.outcome})
			s.dirty = false
		}
	}
	return dst
}

// Stats returns the counters.
func (f *Feed) Stats() Stats {
	return Stats{Offered: f.offered.Load(), Coalesced: f.coalesced.Load(), SourcesDropped: f.dropped.Load()}
}
