package predlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"ramanserve/inference"
)

// A record's contributions are stored as one blob, the same in every
// store, so that one parser (DecodeContributions) reads them back:
//
//	byte    format version (contributionsFormat)
//	byte    flags: 1 = T2 summary follows, 2 = Q summary follows (T2 first)
//	per summary:
//	  float64 total
//	  byte    n top entries, then n x (float64 wavenumber, float64 value)
//	  byte    n regions, then n x (float64 low, float64 high, float64 value)
//
// Numbers are little-endian IEEE 754. A summary holds at most
// MaxStoredEntries top entries and as many regions, so a blob is at most
// MaxContributionsBytes, and a hostile or damaged blob can make the
// reader allocate no more than that.
const (
	contributionsFormat = 1
	flagT2              = 1
	flagQ               = 2
	// MaxStoredEntries bounds a stored summary's top list and its regions
	// (inference.MaxTopContributions; a model with more regions keeps its
	// first MaxStoredEntries, and the summary says so by not adding up).
	MaxStoredEntries = inference.MaxTopContributions
	// MaxContributionsBytes is the largest blob EncodeContributions writes.
	MaxContributionsBytes = 2 + 2*(8+1+MaxStoredEntries*16+1+MaxStoredEntries*24)
)

// ErrBadContributions: a stored contributions blob is not one
// EncodeContributions wrote.
var ErrBadContributions = errors.New("predlog: malformed stored contributions")

// EncodeContributions appends c's stored form to dst; nil c appends
// nothing (the record stores NULL).
func EncodeContributions(dst []byte, c *inference.Contributions) []byte {
	if c == nil || (!c.HasT2 && !c.HasQ) {
		return dst
	}
	var flags byte
	if c.HasT2 {
		flags |= flagT2
	}
	if c.HasQ {
		flags |= flagQ
	}
	dst = append(dst, contributionsFormat, flags)
	if c.HasT2 {
		dst = appendSummary(dst, &c.T2)
	}
	if c.HasQ {
		dst = appendSummary(dst, &c.Q)
	}
	return dst
}

func appendSummary(dst []byte, s *inference.ContributionSummary) []byte {
	f := func(v float64) { dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v)) }
	f(s.Total)
	top := s.Top[:min(len(s.Top), MaxStoredEntries)]
	dst = append(dst, byte(len(top)))
	for _, v := range top {
		f(v.Wavenumber)
		f(v.Value)
	}
	regions := s.Regions[:min(len(s.Regions), MaxStoredEntries)]
	dst = append(dst, byte(len(regions)))
	for _, r := range regions {
		f(r.Region[0])
		f(r.Region[1])
		f(r.Value)
	}
	return dst
}

// ContributionsBytes is the length of c's stored form.
func ContributionsBytes(c *inference.Contributions) int {
	if c == nil || (!c.HasT2 && !c.HasQ) {
		return 0
	}
	n := 2
	for _, s := range []struct {
		has bool
		s   *inference.ContributionSummary
	}{{c.HasT2, &c.T2}, {c.HasQ, &c.Q}} {
		if s.has {
			n += 8 + 1 + 16*min(len(s.s.Top), MaxStoredEntries) + 1 + 24*min(len(s.s.Regions), MaxStoredEntries)
		}
	}
	return n
}

// DecodeContributions reads a blob EncodeContributions wrote: nil, nil
// for an empty one (nothing stored). Anything else, a blob cut short,
// with bytes left over, of another version, with counts past the bounds
// or numbers that are not finite, is ErrBadContributions.
func DecodeContributions(blob []byte) (*inference.Contributions, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	if len(blob) < 2 || blob[0] != contributionsFormat {
		return nil, fmt.Errorf("%w: unknown format", ErrBadContributions)
	}
	flags := blob[1]
	if flags == 0 || flags&^(flagT2|flagQ) != 0 {
		return nil, fmt.Errorf("%w: flags %#x", ErrBadContributions, flags)
	}
	d := summaryReader{buf: blob[2:]}
	c := &inference.Contributions{}
	if flags&flagT2 != 0 {
		c.HasT2 = true
		d.summary(&c.T2)
	}
	if flags&flagQ != 0 {
		c.HasQ = true
		d.summary(&c.Q)
	}
	if d.err == nil && len(d.buf) != 0 {
		d.err = fmt.Errorf("%w: %d bytes past the end", ErrBadContributions, len(d.buf))
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// summaryReader reads the summaries of a blob, keeping the first error.
type summaryReader struct {
	buf []byte
	err error
}

func (d *summaryReader) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.buf) < 8 {
		d.err = fmt.Errorf("%w: cut short", ErrBadContributions)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.buf))
	d.buf = d.buf[8:]
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.err = fmt.Errorf("%w: a number is not finite", ErrBadContributions)
	}
	return v
}

// count reads an entry count, checking it against the bound and against
// the bytes left (each entry is size bytes) before anything is allocated.
func (d *summaryReader) count(size int) int {
	if d.err != nil {
		return 0
	}
	if len(d.buf) < 1 {
		d.err = fmt.Errorf("%w: cut short", ErrBadContributions)
		return 0
	}
	n := int(d.buf[0])
	d.buf = d.buf[1:]
	if n > MaxStoredEntries || n*size > len(d.buf) {
		d.err = fmt.Errorf("%w: %d entries", ErrBadContributions, n)
		return 0
	}
	return n
}

func (d *summaryReader) summary(s *inference.ContributionSummary) {
	s.Total = d.float()
	if n := d.count(16); n > 0 {
		s.Top = make([]inference.VariableContribution, n)
		for i := range s.Top {
			s.Top[i] = inference.VariableContribution{Wavenumber: d.float(), Value: d.float()}
		}
	}
	if n := d.count(24); n > 0 {
		s.Regions = make([]inference.RegionContribution, n)
		for i := range s.Regions {
			s.Regions[i] = inference.RegionContribution{Region: [2]float64{d.float(), d.float()}, Value: d.float()}
		}
	}
}

// CloneContributions is a deep copy of c, for a record that must not
// share the reply's reused slices; nil for nil.
func CloneContributions(c *inference.Contributions) *inference.Contributions {
	if c == nil {
		return nil
	}
	out := &inference.Contributions{HasT2: c.HasT2, HasQ: c.HasQ}
	if c.HasT2 {
		out.T2 = cloneSummary(&c.T2)
	}
	if c.HasQ {
		out.Q = cloneSummary(&c.Q)
	}
	return out
}

func cloneSummary(s *inference.ContributionSummary) inference.ContributionSummary {
	out := inference.ContributionSummary{Total: s.Total}
	if len(s.Top) > 0 {
		out.Top = append([]inference.VariableContribution(nil), s.Top...)
	}
	if len(s.Regions) > 0 {
		out.Regions = append([]inference.RegionContribution(nil), s.Regions...)
	}
	return out
}
