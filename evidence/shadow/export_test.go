package shadow

// NewIdle builds a Scorer whose worker is not started, so that a
// benchmark times the hand-off alone (Discard plays the worker's part).
func NewIdle(opts Options) *Scorer {
	s, _ := newScorer(opts)
	return s
}

// Discard takes the oldest queued spectrum and returns its buffer to the
// free list without scoring it.
func (s *Scorer) Discard() { s.recycle(<-s.queue) }
