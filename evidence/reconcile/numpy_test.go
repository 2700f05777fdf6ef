package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// numpyResult is one line of testdata/stats_numpy.py's answer.
type numpyResult struct {
	Name                          string
	N                             int
	RMSEP, Bias, Slope, Intercept *float64
}

type numpyCase struct {
	Name      string    `json:"name"`
	Predicted []float64 `json:"predicted"`
	Lab       []float64 `json:"lab"`
}

// runNumpy computes the reference statistics of cases with
// testdata/stats_numpy.py.
func runNumpy(t *testing.T, cases []numpyCase) map[string]numpyResult {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("numpy is required in CI (make deps): %v", err)
		}
		t.Skip("Debian python3-numpy not available (make deps)")
	}
	in, err := json.Marshal(map[string]any{"cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(path, in, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(py, filepath.Join("testdata", "stats_numpy.py"), path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("stats_numpy.py: %v\n%s", err, stderr.String())
	}
	var results []numpyResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("stats_numpy.py output: %v\n%s", err, out)
	}
	byName := make(map[string]numpyResult, len(results))
	for _, r := range results {
		byName[r.Name] = r
	}
	if len(byName) != len(cases) {
		t.Fatalf("stats_numpy.py answered %d cases of %d", len(byName), len(cases))
	}
	return byName
}

// TestPerformanceMatchesNumPy is the "reconciliation is exact":
// with known predictions and lab values (a scenario whose matches the
// test knows by construction, posted as a CSV file through Post), the
// n, RMSEP, bias, slope and intercept Performance reports, for the
// version asked for and every other version on its spectra, and the
// per-batch bias series, equal testdata/stats_numpy.py's NumPy
// computation on the same pairs to 1e-9 (absolute, in g/L; the slope is
// dimensionless). The second scenario adds 500 g/L to every
// concentration, so that sums that are not centred would lose the
// digits the comparison needs.
func TestPerformanceMatchesNumPy(t *testing.T) {
	const tol = 1e-9
	worst := 0.0
	for _, offset := range []float64{0, 500} {
		for _, asked := range []struct {
			version string
			others  []string
		}{{"v1", []string{"v2", "v3"}}, {"v2", []string{"v1"}}} {
			t.Run(fmt.Sprintf("offset %g, %s", offset, asked.version), func(t *testing.T) {
				s := newScenario(7, offset)
				rec := postCSV(t, loggedPredictions(t, s.preds), &reconcile.MemoryStore{}, s.csv)
				rep, err := rec.Performance(context.Background(), asked.version, time.Time{}, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				all := append([]reconcile.VersionStats{rep.Version}, rep.Others...)
				var names []string
				for _, vs := range all {
					names = append(names, vs.Version)
				}
				if want := append([]string{asked.version}, asked.others...); !slices.Equal(names, want) {
					t.Fatalf("versions %v, want %v", names, want)
				}
				gate := asked.version
				var cases []numpyCase
				for _, vs := range all {
					for a := range inference.Analyte(inference.NumAnalytes) {
						for key, pr := range s.pairs(vs.Version, gate, a) {
							cases = append(cases, numpyCase{fmt.Sprintf("%s|%s|%s", vs.Version, key, a), pr[0], pr[1]})
						}
					}
				}
				ref := runNumpy(t, cases)
				check := func(name, stat string, got, want *float64) {
					t.Helper()
					if (got == nil) != (want == nil) {
						t.Errorf("%s %s: got %v, NumPy %v", name, stat, fmtPtr(got), fmtPtr(want))
						return
					}
					if got == nil {
						return
					}
					d := math.Abs(*got - *want)
					worst = math.Max(worst, d)
					if !(d <= tol) {
						t.Errorf("%s %s: got %.17g, NumPy %.17g (|diff| %.3g > %g)", name, stat, *got, *want, d, tol)
					}
				}
				compared := 0
				for _, vs := range all {
					for _, as := range vs.Analytes {
						name := fmt.Sprintf("%s||%s", vs.Version, as.Analyte)
						want, ok := ref[name]
						if !ok {
							want = numpyResult{Name: name} // no pairs at all
						}
						if as.N != want.N {
							t.Errorf("%s: n %d, NumPy %d", name, as.N, want.N)
						}
						check(name, "RMSEP", as.RMSEP, want.RMSEP)
						check(name, "bias", as.Bias, want.Bias)
						check(name, "slope", as.Slope, want.Slope)
						check(name, "intercept", as.Intercept, want.Intercept)
						compared += as.N
					}
					for _, bb := range vs.Batches {
						for _, ab := range bb.Analytes {
							name := fmt.Sprintf("%s|%s|%s", vs.Version, bb.BatchID, ab.Analyte)
							want := ref[name]
							if ab.N != want.N {
								t.Errorf("%s: n %d, NumPy %d", name, ab.N, want.N)
							}
							check(name, "bias", ab.Bias, want.Bias)
						}
					}
				}
				if compared == 0 {
					t.Fatal("no pair compared")
				}
			})
		}
	}
	t.Logf("largest |Go - NumPy| over every statistic: %.3g", worst)
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

// postCSV parses a lab file and posts it to a new Reconciler over log and
// store.
func postCSV(t *testing.T, log predlog.Reader, store reconcile.LabStore, csv []byte) *reconcile.Reconciler {
	t.Helper()
	rec, err := reconcile.New(log, store, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	records, err := reconcile.ParseCSV(bytes.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Post(context.Background(), records); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestAllVersionsIsPerformanceOfEach: AllVersions gives, for every
// version with a prediction on a matched spectrum, what Performance
// gives for it, and names no other version.
func TestAllVersionsIsPerformanceOfEach(t *testing.T) {
	ctx := context.Background()
	s := newScenario(7, 0)
	rec := postCSV(t, loggedPredictions(t, s.preds), &reconcile.MemoryStore{}, s.csv)
	all, err := rec.AllVersions(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, vs := range all {
		names = append(names, vs.Version)
		rep, err := rec.Performance(ctx, vs.Version, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(vs, rep.Version) {
			t.Errorf("%s: AllVersions %+v\nPerformance %+v", vs.Version, vs, rep.Version)
		}
	}
	if want := []string{"v1", "v2", "v3"}; !slices.Equal(names, want) {
		t.Fatalf("versions %v, want %v", names, want)
	}
	// A range with no lab result names no version.
	none, err := rec.AllVersions(ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{})
	if err != nil || len(none) != 0 {
		t.Fatalf("a range without lab results: %v, %v", none, err)
	}
}
