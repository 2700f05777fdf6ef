package jobs

import (
	"encoding/json"
	"math"
	"sort"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/trainer"
)

// TrainingOptions are the training options of the upload's TrainingMeta,
// as given (zero fields: the manager's defaults). Preprocessing is the
// contract's JSON array of steps.
type TrainingOptions struct {
	Wavenumbers    []float64       `json:"wavenumbers,omitempty"`
	Components     int             `json:"components,omitempty"`
	MaxComponents  int             `json:"max_components,omitempty"`
	Folds          int             `json:"cv_folds,omitempty"`
	Segments       string          `json:"cv_segments,omitempty"`
	Rule           string          `json:"component_rule,omitempty"`
	ExcludeScanIDs []string        `json:"exclude_scan_ids,omitempty"`
	Regions        [][2]float64    `json:"regions,omitempty"`
	Preprocessing  json.RawMessage `json:"preprocessing,omitempty"`
}

// jobOptions are the manager's trainer options with the job's own on top,
// checked against ds (trainer.CheckOptions), and the bytes of the copy
// training will prepare: errors wrap trainer.ErrInvalidOptions and name
// the contract's field.
func (m *Manager) jobOptions(ds *trainer.Dataset, o TrainingOptions) (trainer.Options, int64, error) {
	opts := m.opts.Train
	if o.Wavenumbers != nil {
		opts.Wavenumbers = o.Wavenumbers
	}
	if o.Folds > 0 {
		opts.Folds = o.Folds
	}
	if o.Segments != "" {
		opts.Segments = o.Segments
	}
	if o.Rule != "" {
		opts.Rule = o.Rule
	}
	if o.MaxComponents > 0 {
		opts.MaxComponents = o.MaxComponents
	}
	if o.Components > 0 {
		opts.Components = o.Components
	}
	opts.ExcludeScanIDs = o.ExcludeScanIDs
	opts.Regions = o.Regions
	if len(o.Preprocessing) > 0 {
		recipe, err := preprocess.ParseRecipe(o.Preprocessing)
		if err != nil {
			return trainer.Options{}, 0, trainer.RecipeError(err)
		}
		opts.Preprocessing = recipe
	}
	prepared, err := trainer.CheckOptions(ds, opts)
	if err != nil {
		return trainer.Options{}, 0, err
	}
	return opts, prepared, nil
}

// chargePrepared charges r the n bytes of the prepared copy training
// makes of ds (jobOptions): with the data set's own charge, which already
// covers one fit, it keeps a job's memory under the budget whatever its
// options. A refusal is a *trainer.MemoryBudgetError (413 or 503).
func chargePrepared(r *Reservation, ds *trainer.Dataset, n int64) error {
	if n == 0 || r.TryAcquire(n) {
		return nil
	}
	return &trainer.MemoryBudgetError{Rows: ds.Len(), Charged: r.charged, Need: n, Limit: r.Limit()}
}

// MaxOutliers is the most outliers a job's record lists (the most
// extreme first); Review.OutliersTotal counts them all.
const MaxOutliers = 1000

// Review is what a done job reports of its model beside the seed's
// figures: the contract's TrainingResult fields.
type Review struct {
	Selection       *Selection     `json:"component_selection,omitempty"`
	CVCurve         []CVPoint      `json:"cv_curve,omitempty"`
	Limits          *OutlierLimits `json:"outlier_limits,omitempty"`
	Outliers        []Outlier      `json:"outliers,omitempty"`
	OutliersTotal   int            `json:"outliers_total"`
	SpikesRepaired  int            `json:"spikes_repaired"`
	SpectraDespiked int            `json:"spectra_despiked"`
	RowsUsed        int            `json:"rows_used"`
}

// Selection is the contract's ComponentSelection.
type Selection struct {
	Components         int                 `json:"components"`
	Rule               string              `json:"rule"`
	Segments           string              `json:"cv_segments,omitempty"`
	MaxComponents      int                 `json:"max_components"`
	Folds              int                 `json:"folds"`
	MinScoreComponents int                 `json:"min_score_components"`
	RMSECV             inference.Breakdown `json:"rmsecv"`
}

// CVPoint is the contract's CVPoint.
type CVPoint struct {
	Components int                 `json:"components"`
	RMSECV     inference.Breakdown `json:"rmsecv"`
	R2CV       inference.Breakdown `json:"r2cv"`
	Score      float64             `json:"score"`
	ScoreSE    float64             `json:"score_se"`
}

// OutlierLimits is the contract's OutlierLimits (0: no such limit).
type OutlierLimits struct {
	T2                  float64 `json:"t2"`
	Q                   float64 `json:"q"`
	StudentizedResidual float64 `json:"studentized_residual"`
}

// Outlier reasons, as in the contract's TrainingOutlier.reasons.
const (
	ReasonT2            = "t2"
	ReasonQ             = "q"
	ReasonLabelResidual = "label_residual"
)

// Outlier is the contract's TrainingOutlier.
type Outlier struct {
	ScanID               string              `json:"scan_id"`
	Reasons              []string            `json:"reasons"`
	T2                   float64             `json:"t2"`
	Q                    float64             `json:"q"`
	ReducedT2            float64             `json:"reduced_t2"`
	ReducedQ             float64             `json:"reduced_q"`
	StudentizedResiduals inference.Breakdown `json:"studentized_residuals"`

	extremity float64 // the largest of ReducedT2, ReducedQ and |r|/3
}

// newReview summarises a trained model's Review for the job record.
func newReview(p *inference.PLSParams) Review {
	r := p.Review
	if r == nil {
		return Review{}
	}
	out := Review{SpikesRepaired: r.SpikesRepaired, SpectraDespiked: r.SpectraDespiked, RowsUsed: len(r.ScanIDs)}
	sel := &Selection{Components: r.Selection.Components, Rule: r.Selection.Rule, Segments: r.Selection.Segments, MaxComponents: r.Selection.MaxComponents,
		Folds: r.Selection.Folds, MinScoreComponents: r.Selection.MinScoreComponents}
	for k, pt := range r.CVCurve {
		c := CVPoint{Components: pt.Components, Score: pt.Score, ScoreSE: pt.ScoreSE}
		for j, a := range p.Targets {
			c.RMSECV.Set(a, pt.RMSECV[j])
			c.R2CV.Set(a, pt.R2CV[j])
		}
		out.CVCurve = append(out.CVCurve, c)
		if k+1 == sel.Components {
			sel.RMSECV = c.RMSECV
		}
	}
	out.Selection = sel
	out.Limits = &OutlierLimits{T2: r.T2Limit, Q: r.QLimit, StudentizedResidual: trainer.StudentizedResidualLimit}
	out.Outliers, out.OutliersTotal = outliers(p, out.Limits)
	return out
}

// outliers lists the training rows beyond a limit, the most extreme first,
// at most MaxOutliers, and counts them all.
func outliers(p *inference.PLSParams, lim *OutlierLimits) ([]Outlier, int) {
	r := p.Review
	var all []Outlier
	for i, id := range r.ScanIDs {
		o := Outlier{ScanID: id, T2: r.T2[i], Q: r.Q[i]}
		if lim.T2 > 0 {
			o.ReducedT2 = o.T2 / lim.T2
			if o.ReducedT2 > 1 {
				o.Reasons = append(o.Reasons, ReasonT2)
			}
		}
		if lim.Q > 0 {
			o.ReducedQ = o.Q / lim.Q
			if o.ReducedQ > 1 {
				o.Reasons = append(o.Reasons, ReasonQ)
			}
		}
		o.extremity = math.Max(o.ReducedT2, o.ReducedQ)
		label := false
		for j, a := range p.Targets {
			v := r.StudentizedResiduals.At(i, j)
			o.StudentizedResiduals.Set(a, v)
			o.extremity = math.Max(o.extremity, math.Abs(v)/lim.StudentizedResidual)
			label = label || math.Abs(v) > lim.StudentizedResidual
		}
		if label {
			o.Reasons = append(o.Reasons, ReasonLabelResidual)
		}
		if len(o.Reasons) > 0 {
			all = append(all, o)
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].extremity > all[b].extremity })
	return all[:min(len(all), MaxOutliers)], len(all)
}
