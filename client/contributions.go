package client

import (
	"context"

	"ramanserve/server/codec/wire"
)

// PredictOptions are the options of a predict request (api/messages.md,
// section 6).
type PredictOptions struct {
	// Contributions, when HasContributions, asks for the reply's
	// contributions with the Contributions largest variables (0 to 64; 0:
	// the totals and region sums only).
	Contributions    int
	HasContributions bool
}

// Contributions are a reply's T2 and Q contributions (api/messages.md,
// section 8.1); a summary is nil when the model does not compute its
// statistic.
type Contributions struct {
	T2, Q *ContributionSummary
}

// ContributionSummary is one statistic's contributions: the statistic,
// its largest contributions (largest first) and the sums per region of
// the model.
type ContributionSummary struct {
	Total   float64
	Top     []VariableContribution
	Regions []RegionContribution
}

// VariableContribution is one variable's contribution.
type VariableContribution struct {
	Wavenumber float64 // cm-1
	Value      float64
}

// RegionContribution is the sum of the contributions over one region.
type RegionContribution struct {
	Region [2]float64 // [low, high] cm-1
	Value  float64
}

// PredictWithOptions is Predict with the request's options: with
// o.HasContributions the reply's Contributions are set.
func (c *PredictionClient) PredictWithOptions(ctx context.Context, s *Spectrum, sc *ScanContext, o *PredictOptions) (*PredictReply, error) {
	rep, err := c.call(ctx, func(dst []byte, id string) []byte {
		return AppendPredictRequestWithOptions(dst, id, unixNow(), s, sc, o)
	}, wire.TypePredictReply)
	if err != nil {
		return nil, err
	}
	return DecodePredictReply(rep.Body)
}

// decodeContributions reads a reply's contributions map.
func decodeContributions(r *wire.Reader, field string) (*Contributions, error) {
	c := &Contributions{}
	err := mapEntries(r, field, func(key string) (err error) {
		switch key {
		case "t2":
			c.T2, err = decodeSummary(r, field+".t2")
		case "q":
			c.Q, err = decodeSummary(r, field+".q")
		default:
			err = r.Skip()
		}
		return err
	})
	return c, err
}

func decodeSummary(r *wire.Reader, field string) (*ContributionSummary, error) {
	s := &ContributionSummary{}
	err := mapEntries(r, field, func(key string) (err error) {
		switch key {
		case "total":
			s.Total, err = numberField(r, field+".total")
		case "top":
			err = arrayEntries(r, field+".top", func() error {
				var v VariableContribution
				err := mapEntries(r, field+".top", func(k string) (err error) {
					switch k {
					case "wavenumber":
						v.Wavenumber, err = numberField(r, field+".top.wavenumber")
					case "value":
						v.Value, err = numberField(r, field+".top.value")
					default:
						err = r.Skip()
					}
					return err
				})
				s.Top = append(s.Top, v)
				return err
			})
		case "regions":
			err = arrayEntries(r, field+".regions", func() error {
				var v RegionContribution
				err := mapEntries(r, field+".regions", func(k string) (err error) {
					switch k {
					case "region":
						n, err := r.ReadArrayLen()
						if err != nil || n != 2 {
							return badReply("%s.regions.region: not an array of 2 numbers", field)
						}
						for i := range v.Region {
							if v.Region[i], err = numberField(r, field+".regions.region"); err != nil {
								return err
							}
						}
						return nil
					case "value":
						v.Value, err = numberField(r, field+".regions.value")
					default:
						err = r.Skip()
					}
					return err
				})
				s.Regions = append(s.Regions, v)
				return err
			})
		default:
			err = r.Skip()
		}
		return err
	})
	return s, err
}

// arrayEntries calls fn for each element of the array at r.
func arrayEntries(r *wire.Reader, field string, fn func() error) error {
	n, err := r.ReadArrayLen()
	if err != nil {
		return fieldErr(field, err)
	}
	for range n {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}
