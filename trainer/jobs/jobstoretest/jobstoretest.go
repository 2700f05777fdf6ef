// Package jobstoretest is the contract of jobs.Store and jobs.UploadSpool:
// every implementation runs RunStore and RunUploadSpool from its own tests,
// giving the suite a way to make fresh storage and open stores on it.
package jobstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/trainer/jobs"
)

// NewStorage makes fresh, empty storage for one subtest and returns how to
// open a store on it. Every call of open returns a store on the same
// storage, as a restarted server gets one; open registers the store's
// release with t.Cleanup if it needs any.
type NewStorage[S any] func(t *testing.T) (open func(t *testing.T) S)

// RunStore runs the contract of jobs.Store.
func RunStore(t *testing.T, newStorage NewStorage[jobs.Store]) {
	t.Run("EmptyLoadsNothing", func(t *testing.T) {
		s := newStorage(t)(t)
		recs, skipped, err := s.LoadAll(context.Background())
		if err != nil || len(recs) != 0 || len(skipped) != 0 {
			t.Fatalf("LoadAll of new storage: %d records, skipped %v, %v", len(recs), skipped, err)
		}
	})
	t.Run("RoundTripKeepsEveryField", func(t *testing.T) {
		s := newStorage(t)(t)
		want := []*jobs.Job{fullTrainingJob("a"), fullRescoreJob("b"), queuedJob("c", 0)}
		for _, j := range want {
			mustSave(t, s, j)
		}
		assertRecords(t, s, want...)
	})
	t.Run("SaveReplacesTheRecordOfTheSameJob", func(t *testing.T) {
		s := newStorage(t)(t)
		j := queuedJob("a", 0)
		mustSave(t, s, j)
		mustSave(t, s, queuedJob("b", 1))
		started := j.SubmittedAt.Add(time.Second)
		j.Status, j.StartedAt, j.Progress = jobs.Running, &started, 0.5
		mustSave(t, s, j)
		assertRecords(t, s, j, queuedJob("b", 1))
	})
	t.Run("SaveDoesNotKeepTheCallersJob", func(t *testing.T) {
		s := newStorage(t)(t)
		j := queuedJob("a", 0)
		mustSave(t, s, j)
		j.Status, j.Meta.Operator = jobs.Failed, "changed after Save"
		assertRecords(t, s, queuedJob("a", 0))
	})
	t.Run("SaveWithAnEndedContextFails", func(t *testing.T) {
		s := newStorage(t)(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Save(ctx, queuedJob("a", 0)); err == nil {
			t.Fatal("Save with an ended context succeeded")
		}
		assertRecords(t, s)
	})
	t.Run("ReopenKeepsTheRecords", func(t *testing.T) {
		open := newStorage(t)
		s := open(t)
		want := []*jobs.Job{fullTrainingJob("a"), fullRescoreJob("b")}
		for _, j := range want {
			mustSave(t, s, j)
		}
		assertRecords(t, open(t), want...)
	})
	t.Run("ConcurrentSaves", func(t *testing.T) {
		s := newStorage(t)(t)
		const writers, each = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each*2)
		for w := range writers {
			wg.Go(func() {
				for k := range each {
					// Each writer's own jobs, and one job every writer
					// rewrites: whichever save lands last, its record is whole.
					errs <- s.Save(context.Background(), queuedJob(fmt.Sprintf("w%d-%d", w, k), w*each+k))
					shared := fullTrainingJob("shared")
					shared.Meta.Notes = fmt.Sprintf("writer %d", w)
					errs <- s.Save(context.Background(), shared)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		recs, skipped, err := s.LoadAll(context.Background())
		if err != nil || len(skipped) != 0 {
			t.Fatalf("LoadAll: skipped %v, %v", skipped, err)
		}
		if len(recs) != writers*each+1 {
			t.Fatalf("%d records, want %d", len(recs), writers*each+1)
		}
		for _, r := range recs {
			if r.ID != "shared" {
				continue
			}
			want := fullTrainingJob("shared")
			want.Meta.Notes = r.Meta.Notes
			if !slices.Contains(writerNotes(writers), r.Meta.Notes) || encode(t, r) != encode(t, want) {
				t.Fatalf("the record every writer rewrote is not one of theirs: %s", encode(t, r))
			}
		}
	})
}

func writerNotes(n int) []string {
	var out []string
	for w := range n {
		out = append(out, fmt.Sprintf("writer %d", w))
	}
	return out
}

// RunUploadSpool runs the contract of jobs.UploadSpool.
func RunUploadSpool(t *testing.T, newStorage NewStorage[jobs.UploadSpool]) {
	ctx := context.Background()
	t.Run("OpenOfNothingIsErrNoUpload", func(t *testing.T) {
		s := newStorage(t)(t)
		assertNoUpload(t, s, "a")
	})
	t.Run("RoundTrip", func(t *testing.T) {
		s := newStorage(t)(t)
		want := map[string][]byte{"empty": {}, "small": []byte("RAMANDS1 and some bytes"), "large": payload(3<<20 + 17)}
		for id, b := range want {
			mustPut(t, s, id, b)
		}
		for id, b := range want {
			assertUpload(t, s, id, b)
		}
	})
	t.Run("PutReplaces", func(t *testing.T) {
		s := newStorage(t)(t)
		mustPut(t, s, "a", payload(1000))
		mustPut(t, s, "a", []byte("shorter"))
		assertUpload(t, s, "a", []byte("shorter"))
	})
	t.Run("FailedPutStoresNothing", func(t *testing.T) {
		s := newStorage(t)(t)
		boom := errors.New("the encoder failed")
		failing := io.MultiReader(bytes.NewReader(payload(100_000)), errReader{boom})
		if err := s.Put(ctx, "new", failing); !errors.Is(err, boom) {
			t.Fatalf("Put of a failing reader: %v, want the reader's error", err)
		}
		assertNoUpload(t, s, "new")
		mustPut(t, s, "old", []byte("before"))
		if err := s.Put(ctx, "old", io.MultiReader(bytes.NewReader(payload(100_000)), errReader{boom})); !errors.Is(err, boom) {
			t.Fatalf("Put of a failing reader: %v, want the reader's error", err)
		}
		assertUpload(t, s, "old", []byte("before"))
	})
	t.Run("PutWithAnEndedContextStoresNothing", func(t *testing.T) {
		s := newStorage(t)(t)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(ended, "a", bytes.NewReader(payload(100))); err == nil {
			t.Fatal("Put with an ended context succeeded")
		}
		assertNoUpload(t, s, "a")
	})
	t.Run("RemoveDeletesOnlyItsID", func(t *testing.T) {
		s := newStorage(t)(t)
		mustPut(t, s, "a", []byte("a"))
		mustPut(t, s, "b", []byte("b"))
		if err := s.Remove(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		assertNoUpload(t, s, "a")
		assertUpload(t, s, "b", []byte("b"))
		if err := s.Remove(ctx, "a"); err != nil {
			t.Fatalf("removing nothing: %v", err)
		}
		if err := s.Remove(ctx, "never"); err != nil {
			t.Fatalf("removing nothing: %v", err)
		}
	})
	t.Run("ReopenKeepsTheUploads", func(t *testing.T) {
		open := newStorage(t)
		s := open(t)
		mustPut(t, s, "a", payload(5000))
		mustPut(t, s, "gone", []byte("x"))
		if err := s.Remove(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		again := open(t)
		assertUpload(t, again, "a", payload(5000))
		assertNoUpload(t, again, "gone")
	})
	t.Run("ConcurrentUse", func(t *testing.T) {
		s := newStorage(t)(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := range 8 {
			wg.Go(func() {
				id := fmt.Sprintf("w%d", w)
				for k := range 4 {
					b := payload(10_000 + w*100 + k)
					if err := s.Put(ctx, id, bytes.NewReader(b)); err != nil {
						errs <- err
						return
					}
					got, err := readAll(ctx, s, id)
					if err != nil || !bytes.Equal(got, b) {
						errs <- fmt.Errorf("%s read back %d bytes, %v; want %d", id, len(got), err, len(b))
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// queuedJob is a freshly queued training job submitted k seconds after a
// fixed time.
func queuedJob(id string, k int) *jobs.Job {
	at := time.Date(2026, 3, 4, 5, 6, 7, 800, time.UTC).Add(time.Duration(k) * time.Second)
	return &jobs.Job{ID: id, Kind: jobs.KindTraining, Status: jobs.Queued, Samples: 40 + k, EstimatedSeconds: 3, SubmittedAt: at,
		Meta: jobs.Meta{Operator: "op", Options: jobs.TrainingOptions{Components: 3}}}
}

// fullTrainingJob is a done training job with every part of a record set.
func fullTrainingJob(id string) *jobs.Job {
	j := queuedJob(id, 0)
	started, finished := j.SubmittedAt.Add(time.Second), j.SubmittedAt.Add(9*time.Second)
	var rmse, r2 inference.Breakdown
	rmse.Set(inference.Analyte(0), 0.25)
	r2.Set(inference.Analyte(1), 0.97)
	j.Status, j.Progress, j.StartedAt, j.FinishedAt = jobs.Done, 1, &started, &finished
	j.Meta = jobs.Meta{Operator: "op <&>", AuthenticatedAs: "token-a", SourceBatches: []string{"B1", "B2"}, Notes: "notes\nüñí",
		CSVSHA256: "ab12", Options: jobs.TrainingOptions{Wavenumbers: []float64{200, 201.5}, MaxComponents: 12, Folds: 5,
			ExcludeScanIDs: []string{"s-1"}, Regions: [][2]float64{{400, 1800}}, Preprocessing: json.RawMessage(`[{"step":"snv"}]`)}}
	j.Result = &jobs.Result{NewVersion: "v7", ArtifactPath: "models/v7.npz", RMSE: rmse, R2: r2, Components: 4,
		Review: jobs.Review{Selection: &jobs.Selection{Components: 4, Rule: "one-se", MaxComponents: 12, Folds: 5, RMSECV: rmse},
			CVCurve:  []jobs.CVPoint{{Components: 1, RMSECV: rmse, R2CV: r2, Score: 2, ScoreSE: 0.1}},
			Limits:   &jobs.OutlierLimits{T2: 9.5, Q: 1.25, StudentizedResidual: 3},
			Outliers: []jobs.Outlier{{ScanID: "s-9", Reasons: []string{jobs.ReasonQ}, Q: 2, ReducedQ: 1.6}}, OutliersTotal: 1,
			SpikesRepaired: 2, SpectraDespiked: 1, RowsUsed: 39}}
	return j
}

// fullRescoreJob is a re-scoring job that failed.
func fullRescoreJob(id string) *jobs.Job {
	j := queuedJob(id, 5)
	finished := j.SubmittedAt.Add(time.Minute)
	j.Kind, j.Status, j.Progress, j.StartedAt, j.FinishedAt = jobs.KindRescore, jobs.Failed, 0.42, &j.SubmittedAt, &finished
	j.Error = &jobs.Failure{Code: "INTERRUPTED", Message: "the server stopped"}
	j.Rescore = &jobs.RescoreSpec{Version: "v3", Since: j.SubmittedAt.Add(-time.Hour), Until: j.SubmittedAt, Spectra: 12, Skipped: 1}
	return j
}

func mustSave(t *testing.T, s jobs.Store, j *jobs.Job) {
	t.Helper()
	if err := s.Save(context.Background(), j); err != nil {
		t.Fatalf("Save %s: %v", j.ID, err)
	}
}

// assertRecords checks that s holds exactly want (as the JSON the
// server reports them in: times as instants with their offsets).
func assertRecords(t *testing.T, s jobs.Store, want ...*jobs.Job) {
	t.Helper()
	recs, skipped, err := s.LoadAll(context.Background())
	if err != nil || len(skipped) != 0 {
		t.Fatalf("LoadAll: skipped %v, %v", skipped, err)
	}
	got := map[string]string{}
	for _, r := range recs {
		if _, dup := got[r.ID]; dup {
			t.Fatalf("two records of job %s", r.ID)
		}
		got[r.ID] = encode(t, r)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, w := range want {
		if got[w.ID] != encode(t, w) {
			t.Fatalf("record %s:\n got %s\nwant %s", w.ID, got[w.ID], encode(t, w))
		}
	}
}

func encode(t *testing.T, j *jobs.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// payload is n bytes that differ with their position and with n.
func payload(n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func mustPut(t *testing.T, s jobs.UploadSpool, id string, b []byte) {
	t.Helper()
	if err := s.Put(context.Background(), id, bytes.NewReader(b)); err != nil {
		t.Fatalf("Put %s: %v", id, err)
	}
}

func readAll(ctx context.Context, s jobs.UploadSpool, id string) ([]byte, error) {
	rc, size, err := s.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err == nil && int64(len(b)) != size {
		err = fmt.Errorf("Open said %d bytes, read %d", size, len(b))
	}
	return b, err
}

func assertUpload(t *testing.T, s jobs.UploadSpool, id string, want []byte) {
	t.Helper()
	got, err := readAll(context.Background(), s, id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes, not the %d put", id, len(got), len(want))
	}
}

func assertNoUpload(t *testing.T, s jobs.UploadSpool, id string) {
	t.Helper()
	rc, _, err := s.Open(context.Background(), id)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, jobs.ErrNoUpload) {
		t.Fatalf("Open %s: %v, want jobs.ErrNoUpload", id, err)
	}
}
