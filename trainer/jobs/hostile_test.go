package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/membudget"
)

// What start-up finds in the jobs folder is whatever anyone with access to
// the registry put there. None of it may stop, hang or bloat the start:
// each bad file is skipped (and logged), and the good records still load.

// goodRecord writes a finished job's record, which every start below must
// still load.
func goodRecord(t *testing.T, dir string) {
	t.Helper()
	now := time.Now()
	b, _ := json.Marshal(jobs.Job{ID: "done-1", Status: jobs.Done, Progress: 1, SubmittedAt: now, StartedAt: &now, FinishedAt: &now,
		Result: &jobs.Result{NewVersion: "v1", ArtifactPath: "models/v1.npz"}})
	if err := os.WriteFile(filepath.Join(dir, "done-1.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startWithin starts a Manager on dir and fails the test if it does not
// return within a minute (a FIFO once blocked it for ever; a 5 MiB
// record under the race detector on a busy machine once took over 10 s)
// or fails.
func startWithin(t *testing.T, dir string, budget *membudget.Budget) *jobs.Manager {
	t.Helper()
	type result struct {
		m   *jobs.Manager
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := start(dir, jobs.Options{Budget: budget, Publish: (&publisher{}).publish})
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("start-up failed: %v", r.err)
		}
		t.Cleanup(func() { r.m.Close(context.Background()) })
		if j, err := r.m.Get(context.Background(), "done-1"); err != nil || j.Status != jobs.Done {
			t.Fatalf("the good record beside the bad file: %+v %v", j, err)
		}
		return r.m
	case <-time.After(time.Minute):
		t.Fatal("start-up still blocked after a minute")
	}
	return nil
}

func TestStartSkipsDirectoryNamedLikeRecord(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "evil.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	startWithin(t, dir, nil)
}

func TestStartDoesNotBlockOnFIFO(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	if err := syscall.Mkfifo(filepath.Join(dir, "x.json"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	startWithin(t, dir, nil)
}

// TestStartDoesNotFollowSymlinkToDevZero: reading it would never end,
// growing memory without limit.
func TestStartDoesNotFollowSymlinkToDevZero(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "x.json")); err != nil {
		t.Fatal(err)
	}
	startWithin(t, dir, nil)
}

// TestStartSkipsOversizedRecord: a record over the size limit (here a
// well-formed one, 17 MiB of notes) is not read.
func TestStartSkipsOversizedRecord(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	b, _ := json.Marshal(jobs.Job{ID: "big-1", Status: jobs.Done, Meta: jobs.Meta{Operator: "op", Notes: strings.Repeat("n", 17<<20)}})
	if err := os.WriteFile(filepath.Join(dir, "big-1.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := startWithin(t, dir, nil)
	if _, err := m.Get(context.Background(), "big-1"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("the oversized record was loaded: %v", err)
	}
}

// TestLargestRealRecordSurvivesRestart: the size limit never drops a
// record this server wrote: meta as large as the 1 MiB meta part allows,
// of characters the record escapes to 6 bytes each, reads back.
func TestLargestRealRecordSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	batch := strings.Repeat("<", 250)
	meta := jobs.Meta{Operator: strings.Repeat("&", 256), Notes: strings.Repeat(">", 65536)}
	for range (1<<20 - 2*65536) / 256 {
		meta.SourceBatches = append(meta.SourceBatches, batch)
	}
	ds := trainer.NewDataset(2, 1)
	for i := range 12 {
		ds.AppendRow(string(rune('a'+i)), []float64{1, float64(i)}, []float64{1})
	}
	// The record as this server writes it, in another folder.
	other := t.TempDir()
	writer, err := start(other, jobs.Options{Publish: (&publisher{block: make(chan struct{})}).publish,
		Train: trainer.Options{Wavenumbers: []float64{100, 200}}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := writer.Submit(context.Background(), ds, meta)
	if err != nil {
		t.Fatal(err)
	}
	writer.Close(context.Background())
	rec, err := os.ReadFile(filepath.Join(other, j.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) < 5<<20 {
		t.Fatalf("the record is only %d bytes: not the worst case", len(rec))
	}
	if err := os.WriteFile(filepath.Join(dir, j.ID+".json"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	again := startWithin(t, dir, nil)
	if got, err := again.Get(context.Background(), j.ID); err != nil || got.Meta.Notes != meta.Notes {
		t.Fatalf("a %d-byte record this server wrote was not read back: %v", len(rec), err)
	}
}

// TestStartRefusesCraftedSpoolCheaply: a queued job whose spool claims
// p = q = 1 and as many rows as 256 MiB (a sparse file) could hold fails
// INTERRUPTED, and reading it allocates next to nothing (it once sized a
// map from the header: hundreds of MB before the first row).
func TestStartRefusesCraftedSpoolCheaply(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	now := time.Now()
	b, _ := json.Marshal(jobs.Job{ID: "q-1", Status: jobs.Queued, SubmittedAt: now})
	os.WriteFile(filepath.Join(dir, "q-1.json"), b, 0o644)
	f, err := os.Create(filepath.Join(dir, "q-1.dataset"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20
	head := []byte("RAMANDS1\x01\x00\x00\x00\x01\x00\x00\x00")
	head = append(head, le64(size/21)...)
	f.Write(head)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtimeMem
	before.read()
	m := startWithin(t, dir, membudget.New(1<<30))
	after.read()
	if grew := after.total - before.total; grew > 16<<20 {
		t.Errorf("start-up allocated %d MiB reading a crafted spool", grew>>20)
	}
	j, _ := m.Get(context.Background(), "q-1")
	if j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" || !strings.Contains(j.Error.Message, "could not be read") {
		t.Fatalf("job with a crafted spool: %s %+v", j.Status, j.Error)
	}
}

// TestStartRefusesSpoolThatIsAFIFO: a queued job's spool that is a FIFO
// neither blocks the start nor is read; the job fails INTERRUPTED.
func TestStartRefusesSpoolThatIsAFIFO(t *testing.T) {
	dir := t.TempDir()
	goodRecord(t, dir)
	b, _ := json.Marshal(jobs.Job{ID: "q-1", Status: jobs.Queued, SubmittedAt: time.Now()})
	os.WriteFile(filepath.Join(dir, "q-1.json"), b, 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "q-1.dataset"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	m := startWithin(t, dir, nil)
	if j, _ := m.Get(context.Background(), "q-1"); j.Status != jobs.Failed || j.Error == nil || !strings.Contains(j.Error.Message, "FIFO") {
		t.Fatalf("job with a FIFO for a spool: %s %+v", j.Status, j.Error)
	}
}

// TestQueueFullSaysWhatHoldsTheSlots: uploads in progress are named as
// such, not as waiting jobs.
func TestQueueFullSaysWhatHoldsTheSlots(t *testing.T) {
	m := newManager(t, t.TempDir(), &publisher{}, 1)
	for range 2 {
		r, err := m.Reserve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
	}
	_, err := m.Reserve(context.Background())
	if !errors.Is(err, jobs.ErrQueueFull) || !strings.Contains(err.Error(), "0 running jobs, 0 queued jobs and 2 uploads in progress") {
		t.Fatalf("got %v", err)
	}
}

func le64(v uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

// runtimeMem is the Go heap's cumulative allocation.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	m.total = st.TotalAlloc
}
