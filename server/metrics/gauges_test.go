package metrics

import (
	"math"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/buildinfo"
	"ramanserve/server/codec"
	evidencesvc "ramanserve/service/evidence"
)

// TestLastPredictedConcentration: absent before the first predict, the
// last predict's value per analyte after, and absent again for an
// analyte the last predict's model does not predict.
func TestLastPredictedConcentration(t *testing.T) {
	m := New(Sources{})
	const name = "ramanserve_last_predicted_concentration"
	if f := gathered(t, m)[name]; f != nil {
		t.Fatalf("%s before any predict: %v", name, f)
	}
	r := m.Channel()
	p := prediction(0.5, 0.5)
	for a, v := range []float64{181.5, 92, 20.1} {
		p.Concentrations.Set(inference.Analyte(a), v)
	}
	r.Predicted(p)
	p.Concentrations.Value[inference.EPA] = 182.25
	r.Predicted(p)
	f := gathered(t, m)
	for analyte, want := range map[string]float64{"EPA": 182.25, "DHA": 92, "DPA": 20.1} {
		if got := gaugeOf(t, f, name, map[string]string{"analyte": analyte}); got != want {
			t.Errorf("%s{analyte=%q} = %v, want %v", name, analyte, got, want)
		}
	}
	// A model of EPA alone, then a value that is not finite.
	var epa inference.Prediction
	epa.Concentrations.Set(inference.EPA, 180)
	r.Predicted(&epa)
	f = gathered(t, m)
	if n := len(f[name].GetMetric()); n != 1 || gaugeOf(t, f, name, map[string]string{"analyte": "EPA"}) != 180 {
		t.Errorf("after a predict of EPA alone: %v", f[name])
	}
	epa.Concentrations.Value[inference.EPA] = math.Inf(1)
	r.Predicted(&epa)
	if f := gathered(t, m)[name]; f != nil {
		t.Errorf("after a predict of +Inf: %v", f)
	}
}

// TestRecordPredictAllocatesNothing: the predict path's recording,
// the last concentrations included, allocates nothing (the figure of
// BenchmarkRecordPredict, held by a test).
func TestRecordPredictAllocatesNothing(t *testing.T) {
	r := New(Sources{}).Channel()
	p := prediction(0.4, 1.2)
	for a := range inference.NumAnalytes {
		p.Concentrations.Set(inference.Analyte(a), 100)
	}
	if n := testing.AllocsPerRun(1000, func() {
		r.Predicted(p)
		r.Answered(codec.TypePredict, "", 35*time.Microsecond)
	}); n != 0 {
		t.Errorf("recording a predict: %v allocations, want 0", n)
	}
}

func TestBuildInfo(t *testing.T) {
	build := buildinfo.Info{Version: "v1.4.0", GoVersion: "go1.25.1", Revision: "0b4beba1"}
	f := gathered(t, New(Sources{Build: build}))
	s := series(t, f, "ramanserve_build_info", map[string]string{"version": "v1.4.0", "goversion": "go1.25.1", "revision": "0b4beba1"})
	if s.GetGauge().GetValue() != 1 || len(f["ramanserve_build_info"].GetMetric()) != 1 {
		t.Errorf("ramanserve_build_info: %v", f["ramanserve_build_info"])
	}
	// Without one given, the running binary's.
	running := buildinfo.Read()
	series(t, gathered(t, New(Sources{})), "ramanserve_build_info", map[string]string{"goversion": running.GoVersion, "revision": running.Revision})
}

type agreement []evidencesvc.Agreement

func (a agreement) Agreement() []evidencesvc.Agreement { return a }

func TestLabAgreementGauges(t *testing.T) {
	lab := agreement{
		{Version: "v1", Analyte: inference.EPA, N: 12, Bias: 1.5, RMSEP: 2.25},
		{Version: "v2\xff", Analyte: inference.DPA, N: 3, Bias: -0.5, RMSEP: 0.75},
	}
	f := gathered(t, New(Sources{Lab: lab}))
	for _, c := range []struct {
		version, analyte   string
		bias, rmsep, pairs float64
	}{{"v1", "EPA", 1.5, 2.25, 12}, {"v2\uFFFD", "DPA", -0.5, 0.75, 3}} {
		labels := map[string]string{"version": c.version, "analyte": c.analyte}
		if got := gaugeOf(t, f, "ramanserve_lab_bias", labels); got != c.bias {
			t.Errorf("bias %v = %v, want %v", labels, got, c.bias)
		}
		if got := gaugeOf(t, f, "ramanserve_lab_rmsep", labels); got != c.rmsep {
			t.Errorf("rmsep %v = %v, want %v", labels, got, c.rmsep)
		}
		if got := gaugeOf(t, f, "ramanserve_lab_pairs", labels); got != c.pairs {
			t.Errorf("pairs %v = %v, want %v", labels, got, c.pairs)
		}
	}
	if n := len(f["ramanserve_lab_bias"].GetMetric()); n != 2 {
		t.Errorf("%d bias series, want 2", n)
	}
	// What the source no longer gives (a deleted version) is gone at the
	// next scrape.
	f = gathered(t, New(Sources{Lab: lab[:1]}))
	if n := len(f["ramanserve_lab_rmsep"].GetMetric()); n != 1 {
		t.Errorf("%d rmsep series from one figure, want 1", n)
	}
}
