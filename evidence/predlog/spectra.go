package predlog

import (
	"cmp"
	"slices"
)

// SpectrumGroups gathers records read in PredictionID order into one
// spectrum's at a time, for a store's ByPredictions: Add each record as
// read, then Flush. Each spectrum is handed to use in Role then ID order
// (sorted here, so that a store's query need only order by PredictionID,
// which its index gives for free), in a slice reused for the next.
type SpectrumGroups struct {
	use  func(recs []Record) error
	recs []Record
}

// NewSpectrumGroups returns groups handing each spectrum to use.
func NewSpectrumGroups(use func(recs []Record) error) *SpectrumGroups {
	return &SpectrumGroups{use: use}
}

// Add takes the next record read; when it starts a new spectrum, the
// previous one is handed to use first, and use's error returned.
func (g *SpectrumGroups) Add(rec *Record) error {
	if len(g.recs) > 0 && g.recs[0].PredictionID != rec.PredictionID {
		if err := g.Flush(); err != nil {
			return err
		}
	}
	g.recs = append(g.recs, *rec)
	return nil
}

// Flush hands the spectrum gathered so far, if any, to use.
func (g *SpectrumGroups) Flush() error {
	if len(g.recs) == 0 {
		return nil
	}
	byRoleThenID := func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID))
	}
	// Records logged in role order come sorted; checking first spares
	// the swaps of whole records (a report hands over tens of thousands
	// of spectra).
	if !slices.IsSortedFunc(g.recs, byRoleThenID) {
		slices.SortStableFunc(g.recs, byRoleThenID)
	}
	err := g.use(g.recs)
	g.recs = g.recs[:0]
	return err
}
