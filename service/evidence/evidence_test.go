package evidence_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/registry"
	evidencesvc "ramanserve/service/evidence"
)

// registered is a registry's versions that the test can delete from.
type registered struct {
	mu       sync.Mutex
	versions map[string]bool
}

func (r *registered) Describe(version string) (registry.Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.versions[version] {
		return registry.Entry{}, fmt.Errorf("%w: %s", registry.ErrModelNotFound, version)
	}
	return registry.Entry{Version: version}, nil
}

func (r *registered) delete(version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.versions, version)
}

// TestAgreementFollowsMatchedPosts: the figures appear with the first
// post that matches, hold the bias and RMSEP of each version and
// analyte, and a deleted version's figures go.
func TestAgreementFollowsMatchedPosts(t *testing.T) {
	ctx := context.Background()
	log, err := sqlitelog.OpenLog(ctx, t.TempDir(), predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close(ctx) })
	// Two spectra of batch B-1 (scan_seq 1 and 2), each predicted by v1
	// (active) and v2 (shadow): v1 reads EPA 1 g/L high, v2 exact.
	now := time.Now().UTC()
	lab := [2]float64{100, 110}
	for i, want := range lab {
		id := predlog.NewPredictionID()
		for _, p := range []struct {
			version string
			role    predlog.Role
			off     float64
		}{{"v1", predlog.RoleActive, 1}, {"v2", predlog.RoleShadow, 0}} {
			rec := &predlog.Record{PredictionID: id, Time: now.Add(time.Duration(i-10) * time.Second), ModelVersion: p.version, Role: p.role}
			rec.Concentrations.Set(inference.EPA, want+p.off)
			rec.BatchID, rec.HasBatchID, rec.ScanSeq, rec.HasScanSeq = "B-1", true, float64(i+1), true
			if !log.Record(rec) {
				t.Fatal("record dropped")
			}
		}
	}
	versions := &registered{versions: map[string]bool{"v1": true, "v2": true}}
	rec, err := reconcile.New(log, &reconcile.MemoryStore{}, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := evidencesvc.NewLab(rec, log, versions, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got := svc.Agreement(); len(got) != 0 {
		t.Fatalf("agreement before any post: %v", got)
	}
	post := func(seq int64) reconcile.PostResult {
		t.Helper()
		r := reconcile.LabRecord{BatchID: "B-1", ScanSeq: seq, HasScanSeq: true, LabSampleID: fmt.Sprintf("L-%d", seq)}
		r.Lab.Set(inference.EPA, lab[seq-1])
		// The log commits in batches: post again until it has.
		deadline := time.Now().Add(20 * time.Second)
		for {
			res, err := svc.Post(ctx, []reconcile.LabRecord{r})
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched == 1 || time.Now().After(deadline) {
				return res
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if res := post(1); res.Matched != 1 {
		t.Fatalf("post: %+v", res)
	}
	if res := post(2); res.Matched != 1 {
		t.Fatalf("post: %+v", res)
	}
	got := map[string]evidencesvc.Agreement{}
	for _, a := range svc.Agreement() {
		got[a.Version+"/"+a.Analyte.String()] = a
	}
	want := map[string]evidencesvc.Agreement{
		"v1/EPA": {Version: "v1", Analyte: inference.EPA, N: 2, Bias: 1, RMSEP: 1},
		"v2/EPA": {Version: "v2", Analyte: inference.EPA, N: 2, Bias: 0, RMSEP: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("agreement %v, want %v", got, want)
	}
	for k, w := range want {
		g := got[k]
		if g.N != w.N || math.Abs(g.Bias-w.Bias) > 1e-9 || math.Abs(g.RMSEP-w.RMSEP) > 1e-9 {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
	versions.delete("v2")
	for _, a := range svc.Agreement() {
		if a.Version == "v2" {
			t.Errorf("a deleted version is still reported: %+v", a)
		}
	}
}
