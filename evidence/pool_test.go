package evidence_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/inference"
)

// checkingStore is the embedded store with every Append checked: each
// record's spectrum must still be the one logged for its scan_seq (seq+k
// at point k) before and after the store reads it. Every failEvery-th
// Append fails without storing, and the first waits for gate, so that
// records are refused by a full queue meanwhile: the buffers of failed,
// dropped and committed records all go back to the pool.
type checkingStore struct {
	predlog.Store
	t         *testing.T
	gate      chan struct{}
	calls     atomic.Int64
	failEvery int64
	buffers   map[*float32]int // spectrum buffers seen, by first element; the writer's goroutine only
	reused    int

	mu       sync.Mutex
	appended chan struct{} // closed and replaced at the end of each Append
}

// nextAppend is closed when the next Append ends.
func (s *checkingStore) nextAppend() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appended
}

var errInjected = errors.New("injected failure")

func (s *checkingStore) Append(ctx context.Context, recs []*predlog.Record) error {
	defer func() {
		s.mu.Lock()
		close(s.appended)
		s.appended = make(chan struct{})
		s.mu.Unlock()
	}()
	n := s.calls.Add(1)
	if n == 1 {
		<-s.gate
	}
	s.check(recs, "before")
	for _, r := range recs {
		if len(r.Spectrum) > 0 {
			p := unsafe.SliceData(r.Spectrum)
			if s.buffers[p] > 0 {
				s.reused++
			}
			s.buffers[p]++
		}
	}
	if n%s.failEvery == 0 {
		return errInjected
	}
	err := s.Store.Append(ctx, recs)
	s.check(recs, "after")
	return err
}

func (s *checkingStore) check(recs []*predlog.Record, when string) {
	for _, r := range recs {
		if !spectrumOf(r.Spectrum, r.ScanSeq) {
			s.t.Errorf("%s Append: the spectrum of scan %v is not its own (%v...)", when, r.ScanSeq, r.Spectrum[:min(3, len(r.Spectrum))])
		}
	}
}

// spectrumOf is whether s is the spectrum logged for scan seq.
func spectrumOf(s []float32, seq float64) bool {
	if len(s) != poolPoints {
		return false
	}
	for k, v := range s {
		if v != float32(seq)+float32(k) {
			return false
		}
	}
	return true
}

const poolPoints = 64

// TestPooledSpectraAreNotReusedWhileReferenced: eight goroutines log
// spectra through a small queue while the store checks every record it is
// handed, fails some batches, and at first stalls so that the queue
// drops records. Every spectrum the store sees, and every one it stored,
// is the one logged with the record, although buffers were reused (the
// store sees the same buffer again), and under -race no buffer is written
// while the store reads it. Every record is committed, failed or dropped.
func TestPooledSpectraAreNotReusedWhileReferenced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	inner, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := &checkingStore{Store: inner, t: t, gate: make(chan struct{}), failEvery: 5, buffers: map[*float32]int{}, appended: make(chan struct{})}
	log, err := predlog.New(ctx, store, predlog.Options{Logger: slog.New(slog.DiscardHandler), QueueSize: 32, BatchMax: 16, CommitInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := evidence.New(evidence.Options{Log: log, LogSpectra: true})
	m := model(t, "v1", []float64{1, 2, 3, 4})
	axis := make([]float64, poolPoints)
	for k := range axis {
		axis[k] = 500 + float64(k)
	}
	const workers, each = 8, 250
	var (
		wg       sync.WaitGroup
		openGate sync.Once
	)
	for w := range workers {
		wg.Go(func() {
			// One spectrum and context per goroutine, rewritten for each
			// prediction as a client's buffers are.
			spec := inference.Spectrum{Wavenumbers: axis, Intensities: make([]float64, poolPoints)}
			var p inference.Prediction
			for i := range each {
				seq := w*each + i
				for k := range spec.Intensities {
					spec.Intensities[k] = float64(seq + k)
				}
				sc := inference.ScanContext{BatchID: "pool", HasBatchID: true, ScanSeq: float64(seq), HasScanSeq: true}
				c.Logged(time.Now(), m, &spec, &p, &sc, nil)
				if log.Dropped() == 0 {
					continue // the store stalls until the queue drops
				}
				openGate.Do(func() { close(store.gate) })
				// Then at the store's pace, so that most records reach it.
				// The queue is looked at again on each append, and every
				// 10 ms: an append between the look and the wait would
				// otherwise be missed, with nothing left to wake the wait.
				for deadline := time.Now().Add(2 * time.Minute); log.Stats().Queued >= 16; {
					select {
					case <-store.nextAppend():
					case <-time.After(10 * time.Millisecond):
					}
					if time.Now().After(deadline) {
						t.Error("the queue stayed full for 2 minutes")
						return
					}
				}
			}
		})
	}
	wg.Wait()
	openGate.Do(func() { close(store.gate) })
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := log.Stats()
	if total := st.Committed + st.WriteFailed + st.Dropped; total != workers*each {
		t.Fatalf("committed %d + failed %d + dropped %d = %d, want %d", st.Committed, st.WriteFailed, st.Dropped, total, workers*each)
	}
	if st.Dropped == 0 || st.WriteFailed == 0 || st.Committed == 0 {
		t.Fatalf("committed %d, failed %d, dropped %d: every path must have been taken", st.Committed, st.WriteFailed, st.Dropped)
	}
	if store.reused == 0 {
		t.Fatalf("no spectrum buffer was reused over %d Appends (%d buffers)", store.calls.Load(), len(store.buffers))
	}
	t.Logf("committed %d, failed %d, dropped %d; %d buffers for %d records handed to the store", st.Committed, st.WriteFailed, st.Dropped, len(store.buffers), st.Committed+st.WriteFailed)

	back, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close(ctx)
	stored := 0
	for f := (predlog.Filter{WithSpectra: true, Limit: predlog.MaxSpectraPageLimit}); ; {
		page, err := back.Page(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if !spectrumOf(r.Spectrum, r.ScanSeq) {
				t.Errorf("stored spectrum of scan %v is not its own (%v...)", r.ScanSeq, r.Spectrum[:min(3, len(r.Spectrum))])
			}
		}
		stored += len(page.Records)
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if uint64(stored) != st.Committed {
		t.Errorf("%d records stored with their spectrum, %d committed", stored, st.Committed)
	}
}

// keepingRecorder keeps every record it is handed, never releasing one.
type keepingRecorder struct{ recs []*predlog.Record }

func (k *keepingRecorder) Record(rec *predlog.Record) bool { k.recs = append(k.recs, rec); return true }
func (k *keepingRecorder) Dropped() uint64                 { return 0 }

// TestCollectorAxisFollowsTheSpectrum: records of spectra on the same axis
// share one float32 axis; an axis rewritten in the caller's buffer gets its
// own, and the earlier records keep theirs.
func TestCollectorAxisFollowsTheSpectrum(t *testing.T) {
	rec := &keepingRecorder{}
	c := evidence.New(evidence.Options{Log: rec, LogSpectra: true})
	m := model(t, "v1", []float64{1, 2, 3, 4})
	axis := []float64{500, 600, 700, 800}
	spec := inference.Spectrum{Wavenumbers: axis, Intensities: []float64{1, 2, 3, 4}}
	var p inference.Prediction
	c.Logged(time.Now(), m, &spec, &p, nil, nil)
	c.Logged(time.Now(), m, &spec, &p, nil, nil)
	axis[2] = 701
	c.Logged(time.Now(), m, &spec, &p, nil, nil)
	axis[2] = 700
	c.Logged(time.Now(), m, &spec, &p, nil, nil)
	want := [][]float32{{500, 600, 700, 800}, {500, 600, 700, 800}, {500, 600, 701, 800}, {500, 600, 700, 800}}
	for i, r := range rec.recs {
		if !slices.Equal(r.Wavenumbers, want[i]) {
			t.Errorf("record %d: axis %v, want %v", i, r.Wavenumbers, want[i])
		}
	}
	if &rec.recs[0].Wavenumbers[0] != &rec.recs[1].Wavenumbers[0] {
		t.Error("two records on the same axis do not share it")
	}
}
