package reconcile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
)

// scenario is a prediction log and a lab file whose matches the test
// knows by construction: four batches of twelve spectra 20 s apart,
// predicted by v1 (active) on all of them, by v2 (shadow, EPA and DHA
// only) on batches 3 and 4, and rescored by v3 on batches 1 and 2. The
// lab sampled six spectra of each batch, half named by scan_seq, half by
// a sampled_at up to 9 s from the spectrum, some without DPA; two more
// records match nothing.
type scenario struct {
	preds []*predlog.Record
	// csv is the lab file.
	csv []byte
	// matched maps each matching lab_sample_id to its spectrum, and lab
	// to its values.
	matched map[string]predlog.PredictionID
	lab     map[string]inference.Breakdown
	batch   map[string]string
	// unmatched maps the other lab_sample_ids to their reason.
	unmatched map[string]string
	// order lists the lab_sample_ids in file order.
	order []string
	t0    time.Time
}

// offset is added to every concentration: a narrow spread on a large
// offset is where uncentred sums lose digits.
func newScenario(seed uint64, offset float64) *scenario {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &scenario{
		matched:   map[string]predlog.PredictionID{},
		lab:       map[string]inference.Breakdown{},
		batch:     map[string]string{},
		unmatched: map[string]string{},
		t0:        time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC),
	}
	var csv bytes.Buffer
	csv.WriteString("lab_sample_id,batch_id,scan_seq,sampled_at,EPA,DHA,DPA\n")
	for b := 1; b <= 4; b++ {
		batch := fmt.Sprintf("B-%d", b)
		start := s.t0.Add(time.Duration(b) * time.Hour)
		truth := [3]float64{180 + 5*float64(b), 95 - 2*float64(b), 21}
		for k := range 12 {
			id := predlog.NewPredictionID()
			at := start.Add(time.Duration(k) * 20 * time.Second)
			var actual [3]float64
			for a := range actual {
				actual[a] = offset + truth[a] + 4*rng.NormFloat64()
			}
			pred := func(version string, role predlog.Role, bias, noise float64, analytes int) *predlog.Record {
				var v inference.Breakdown
				for a := range analytes {
					v.Set(inference.Analyte(a), actual[a]+bias+noise*rng.NormFloat64())
				}
				return &predlog.Record{PredictionID: id, Time: at,
					ScanContext: inference.ScanContext{BatchID: batch, HasBatchID: true, ScanSeq: float64(k + 1), HasScanSeq: true}, ModelVersion: version, Role: role, Concentrations: v}
			}
			s.preds = append(s.preds, pred("v1", predlog.RoleActive, 0.8*float64(b), 1.5, 3))
			if b >= 3 {
				s.preds = append(s.preds, pred("v2", predlog.RoleShadow, -0.3, 0.7, 2))
			}
			if b <= 2 {
				s.preds = append(s.preds, pred("v3", predlog.RoleRescore, 0.1, 1.0, 3))
			}
			if k%2 == 1 {
				continue
			}
			sample := fmt.Sprintf("L-%d-%02d", b, k)
			var lab inference.Breakdown
			cells := [3]string{}
			for a := range 3 {
				if a == 2 && k%4 == 0 {
					continue // no DPA
				}
				y := actual[a] + 0.5*rng.NormFloat64()
				lab.Set(inference.Analyte(a), y)
				cells[a] = strconv.FormatFloat(y, 'g', -1, 64)
			}
			s.matched[sample], s.lab[sample], s.batch[sample] = id, lab, batch
			s.order = append(s.order, sample)
			if k%3 == 0 {
				fmt.Fprintf(&csv, "%s,%s,%d,,%s,%s,%s\n", sample, batch, k+1, cells[0], cells[1], cells[2])
			} else {
				drawn := at.Add(time.Duration(rng.IntN(19)-9) * time.Second)
				fmt.Fprintf(&csv, "%s,%s,,%s,%s,%s,%s\n", sample, batch, drawn.Format(time.RFC3339Nano), cells[0], cells[1], cells[2])
			}
		}
	}
	csv.WriteString("L-x-1,B-9,3,,1,,\n")
	csv.WriteString("L-x-2,B-1,," + s.t0.Format(time.RFC3339) + ",1,,\n")
	s.unmatched["L-x-1"] = "unknown_batch"
	s.unmatched["L-x-2"] = "none_within_window"
	s.order = append(s.order, "L-x-1", "L-x-2")
	s.csv = csv.Bytes()
	return s
}

// pairs returns, by construction, the (predicted, lab) pairs of version
// for analyte a over the spectra that only (if not "") also predicted
// on, keyed "" for all batches and by batch id for each batch.
func (s *scenario) pairs(version, only string, a inference.Analyte) map[string][2][]float64 {
	out := map[string][2][]float64{}
	for _, sample := range s.order {
		spectrum, ok := s.matched[sample]
		if !ok {
			continue
		}
		var pred, gate *predlog.Record
		for _, p := range s.preds {
			if p.PredictionID == spectrum && p.ModelVersion == version {
				pred = p
			}
			if p.PredictionID == spectrum && p.ModelVersion == only {
				gate = p
			}
		}
		if pred == nil || (only != "" && gate == nil) {
			continue
		}
		x, hasPred := pred.Concentrations.Value[a], pred.Concentrations.Valid[a]
		y, hasLab := s.lab[sample].Value[a], s.lab[sample].Valid[a]
		if !hasPred || !hasLab {
			continue
		}
		for _, key := range []string{"", s.batch[sample]} {
			pr := out[key]
			pr[0], pr[1] = append(pr[0], x), append(pr[1], y)
			out[key] = pr
		}
	}
	return out
}
