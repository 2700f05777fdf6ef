package shadow

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"
)

// Merge combines the comparisons that several processes made of the same
// shadow version over disjoint spectra (the replicas of a fleet) into the
// one a single scorer would have made of all of them: counts add, means
// and shares are weighted by their counts, root mean squares combine
// through their mean squares. Parts of another version than the first
// are left out. Since is the earliest part's; each analyte's tolerance is
// that of the part with the most spectra.
func Merge(parts ...Status) Status {
	if len(parts) == 0 {
		return Status{}
	}
	out := Status{Version: parts[0].Version, Since: parts[0].Since}
	var weight [len(out.Comparison.Analytes)]int64
	for _, p := range parts {
		if p.Version != out.Version {
			continue
		}
		if p.Since.Before(out.Since) {
			out.Since = p.Since
		}
		c := &out.Comparison
		c.N += p.Comparison.N
		c.Dropped += p.Comparison.Dropped
		c.Failed += p.Comparison.Failed
		for a := range c.Analytes {
			src, dst := &p.Comparison.Analytes[a], &c.Analytes[a]
			if src.N == 0 {
				continue
			}
			n := float64(src.N)
			dst.MeanDifference += n * src.MeanDifference
			dst.RMSD += n * src.RMSD * src.RMSD
			dst.DisagreeShare += n * src.DisagreeShare
			if src.N > weight[a] {
				dst.Tolerance, weight[a] = src.Tolerance, src.N
			}
			dst.N += src.N
		}
	}
	for a := range out.Comparison.Analytes {
		dst := &out.Comparison.Analytes[a]
		if dst.N == 0 {
			continue
		}
		n := float64(dst.N)
		dst.MeanDifference /= n
		dst.RMSD = math.Sqrt(dst.RMSD / n)
		dst.DisagreeShare /= n
	}
	return out
}

// Board is where the replicas of a fleet post their shadow comparisons
// for each other (the fleet's database).
type Board interface {
	// Post records this process's comparison, replacing its last one.
	Post(ctx context.Context, s Status) error
	// Others returns the last comparison of every other live process.
	Others(ctx context.Context) ([]Status, error)
	// Leave removes this process's comparison (a clean shutdown).
	Leave(ctx context.Context) error
}

// FleetView is the shadow comparison of a whole fleet: this process's
// scorer merged with what the other replicas last posted. Run posts and
// reads every period; Status never waits for the board.
type FleetView struct {
	local  *Scorer
	board  Board
	period time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	others []Status // as last read
	failed bool     // the last post or read failed (logged once per outage)
}

// NewFleetView returns the view of local's comparison and the board's.
func NewFleetView(local *Scorer, board Board, period time.Duration, log *slog.Logger) *FleetView {
	if period <= 0 {
		period = time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FleetView{local: local, board: board, period: period, log: log}
}

// Status is the fleet's comparison of the shadow this process runs: its
// own merged with the other replicas' of the same version, as last read
// (at most a period old).
func (v *FleetView) Status() Status {
	own := v.local.Status()
	if own.Version == "" {
		return own
	}
	v.mu.Lock()
	parts := append([]Status{own}, v.others...)
	v.mu.Unlock()
	return Merge(parts...)
}

// Run posts this process's comparison and reads the others' every
// period until ctx ends; on the way out it leaves the board.
func (v *FleetView) Run(ctx context.Context) {
	t := time.NewTicker(v.period)
	defer t.Stop()
	for {
		v.exchange(ctx)
		select {
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			v.board.Leave(leave)
			cancel()
			return
		case <-t.C:
		}
	}
}

// exchange is one post and one read, each bounded by the period.
func (v *FleetView) exchange(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, v.period)
	defer cancel()
	err := v.board.Post(ctx, v.local.Status())
	var others []Status
	if err == nil {
		others, err = v.board.Others(ctx)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		// The others' figures as last read stay: each is cumulative, so
		// an old one is short, never wrong.
		if !v.failed {
			v.log.Warn("the fleet's shadow comparison is not shared; GET /model/shadow shows what was last read", "err", err)
		}
		v.failed = true
		return
	}
	if v.failed {
		v.log.Info("the fleet's shadow comparison is shared again")
	}
	v.failed, v.others = false, others
}
