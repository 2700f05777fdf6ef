package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/membudget"
	"ramanserve/trainer/synth"
)

// writeRecords puts finished job records in dir as a previous process
// left them, and returns them in the listing order (newest first, ties
// by id).
func writeRecords(t testing.TB, dir string, n int) []jobs.Job {
	t.Helper()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var all []jobs.Job
	for i := 0; i < n; i++ {
		st := jobs.Done
		if i%3 == 0 {
			st = jobs.Failed
		}
		// Every fourth pair shares its submitted time: ties go by id.
		j := jobs.Job{ID: fmt.Sprintf("job-%03d", i), Status: st, SubmittedAt: base.Add(time.Duration(i/2) * time.Minute), Meta: jobs.Meta{Operator: "op"}}
		b, _ := json.Marshal(j)
		if err := os.WriteFile(filepath.Join(dir, j.ID+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, j)
	}
	// Newest first; within a minute the lower id first.
	order := make([]jobs.Job, 0, n)
	for i := n - 1; i >= 0; i-- {
		if i%2 == 1 {
			order = append(order, all[i-1], all[i])
			i--
		} else {
			order = append(order, all[i])
		}
	}
	return order
}

func ids(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func pageThrough(t *testing.T, m *jobs.Manager, status jobs.Status, limit int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := m.List(status, limit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("page of %d with limit %d", len(p.Jobs), limit)
		}
		got = append(got, ids(p.Jobs)...)
		if p.Next == "" {
			return got
		}
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		cursor = p.Next
	}
}

// TestListPagesNewestFirst: records on disk are listed after a restart,
// newest first with ties by id, in pages whose cursors survive the
// restart and are not shifted by newer jobs; the status filter applies.
func TestListPagesNewestFirst(t *testing.T) {
	dir := t.TempDir()
	want := writeRecords(t, dir, 23)
	m := open(t, dir, jobs.Options{Publish: (&publisher{}).publish})
	for _, limit := range []int{1, 5, 7, 23, 200} {
		if got := pageThrough(t, m, "", limit); fmt.Sprint(got) != fmt.Sprint(ids(want)) {
			t.Fatalf("limit %d:\n got %v\nwant %v", limit, got, ids(want))
		}
	}
	var failed []string
	for _, j := range want {
		if j.Status == jobs.Failed {
			failed = append(failed, j.ID)
		}
	}
	if got := pageThrough(t, m, jobs.Failed, 3); fmt.Sprint(got) != fmt.Sprint(failed) {
		t.Fatalf("failed only:\n got %v\nwant %v", got, failed)
	}
	if p, _ := m.List(jobs.Running, 10, ""); len(p.Jobs) != 0 || p.Next != "" {
		t.Fatalf("running: %+v", p)
	}
	first, err := m.List("", 10, "")
	if err != nil || len(first.Jobs) != 10 || first.Next == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	// A new job does not shift the next page; a restart does not void the cursor.
	if _, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: 1}).Dataset(30), jobs.Meta{Operator: "new"}); err != nil {
		t.Fatal(err)
	}
	m.Close(context.Background())
	m2 := open(t, dir, jobs.Options{Publish: (&publisher{}).publish})
	second, err := m2.List("", 10, first.Next)
	if err != nil || fmt.Sprint(ids(second.Jobs)) != fmt.Sprint(ids(want[10:20])) {
		t.Fatalf("second page after a restart: %v %v, want %v", err, ids(second.Jobs), ids(want[10:20]))
	}
	if p, _ := m2.List("", 0, ""); len(p.Jobs) != 24 || p.Jobs[0].Meta.Operator != "new" {
		t.Fatalf("default page: %d jobs, first %+v", len(p.Jobs), p.Jobs[0])
	}
}

// TestListRefusesForeignCursors: damaged or made-up cursors are
// ErrInvalidCursor.
func TestListRefusesForeignCursors(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, dir, 3)
	m := open(t, dir, jobs.Options{Publish: (&publisher{}).publish})
	p, _ := m.List("", 1, "")
	for _, c := range []string{"x", "!!!!", p.Next + "A", p.Next[:len(p.Next)-2], "AXsidCI6MSwiaWQiOiJ4In0", "eyJ0IjoxLCJpZCI6IngifQ", string(make([]byte, 600))} {
		if _, err := m.List("", 1, c); !errors.Is(err, jobs.ErrInvalidCursor) {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
}

// TestCancelQueued: a queued job is failed/CANCELLED at once, with its
// place and memory back; cancelling it again, or a done job, is
// ErrJobFinished; an unknown id is ErrJobNotFound.
func TestCancelQueued(t *testing.T) {
	dir := t.TempDir()
	budget := membudget.New(1 << 30)
	pub := &publisher{block: make(chan struct{}), entered: make(chan struct{})}
	m := open(t, dir, jobs.Options{QueueSize: 1, Publish: pub.publish, Budget: budget, Train: trainer.Options{Seed: 1, MaxComponents: 2}})
	submit := func(seed uint64) string {
		r, err := m.Reserve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		j, err := m.SubmitReserved(context.Background(), r, chargedDataset(t, r, seed, 40), jobs.Meta{Operator: "op"})
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	running := submit(1)
	// The running job's charge grows while it fits; it is measured once
	// the job waits to publish, when it no longer moves.
	<-pub.entered
	usedByRunning := budget.Used()
	queued := submit(2)
	if _, err := m.Reserve(context.Background()); !errors.Is(err, jobs.ErrQueueFull) {
		t.Fatalf("queue not full: %v", err)
	}
	j, err := m.Cancel(context.Background(), queued)
	if err != nil || j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "CANCELLED" || j.FinishedAt == nil {
		t.Fatalf("cancel queued: %v %+v", err, j)
	}
	if rec := readRecord(t, dir, queued); rec.Status != jobs.Failed || rec.Error.Code != "CANCELLED" {
		t.Fatalf("record: %+v", rec)
	}
	if budget.Used() > usedByRunning {
		t.Fatalf("budget used %d, the running job alone %d", budget.Used(), usedByRunning)
	}
	r, err := m.Reserve(context.Background())
	if err != nil {
		t.Fatalf("the cancelled job's place is not free: %v", err)
	}
	r.Release()
	if _, err := m.Cancel(context.Background(), queued); !errors.Is(err, jobs.ErrJobFinished) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := m.Cancel(context.Background(), "no-such-job"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	close(pub.block)
	waitStatus(t, m, running, jobs.Done)
	if _, err := m.Cancel(context.Background(), running); !errors.Is(err, jobs.ErrJobFinished) {
		t.Fatalf("cancel done: %v", err)
	}
}

// TestCancelQueuedRemovesItsSavedDataSet: a job queued again after a
// restart has its data set saved in jobs/; cancelling it deletes that.
func TestCancelQueuedRemovesItsSavedDataSet(t *testing.T) {
	dir := t.TempDir()
	pub := &publisher{block: make(chan struct{})}
	m, err := start(dir, jobs.Options{QueueSize: 3, Publish: pub.publish, Train: trainer.Options{Seed: 1, MaxComponents: 2}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 1}).Dataset(30), jobs.Meta{Operator: "o"})
	waitStatus(t, m, first.ID, jobs.Running)
	second, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 2}).Dataset(30), jobs.Meta{Operator: "o"})
	third, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 3}).Dataset(30), jobs.Meta{Operator: "o"})
	m.Close(context.Background())
	pub2 := &publisher{block: make(chan struct{})}
	m2 := open(t, dir, jobs.Options{QueueSize: 3, Publish: pub2.publish, Train: trainer.Options{Seed: 1, MaxComponents: 2}})
	waitStatus(t, m2, second.ID, jobs.Running) // blocks in Publish; third waits
	spool := filepath.Join(dir, third.ID+".dataset")
	if _, err := os.Stat(spool); err != nil {
		t.Fatalf("no saved data set: %v", err)
	}
	if _, err := m2.Cancel(context.Background(), third.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spool); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("saved data set after cancel: %v", err)
	}
	close(pub2.block)
}

// TestCancelRunning: a running job is stopped and recorded
// failed/CANCELLED, nothing is published, and when Cancel returns its
// place and memory are free.
func TestCancelRunning(t *testing.T) {
	dir := t.TempDir()
	budget := membudget.New(1 << 30)
	pub := &publisher{}
	m := open(t, dir, jobs.Options{QueueSize: 1, Publish: pub.publish, Budget: budget, Train: trainer.Options{Seed: 1, MaxComponents: 20}})
	r, _ := m.Reserve(context.Background())
	j, err := m.SubmitReserved(context.Background(), r, chargedDataset(t, r, 1, 600), jobs.Meta{Operator: "op"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, j.ID, jobs.Running)
	hold, err := m.Reserve(context.Background()) // the other place
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	start := time.Now()
	got, err := m.Cancel(context.Background(), j.ID)
	if err != nil || got.Status != jobs.Failed || got.Error == nil || got.Error.Code != "CANCELLED" {
		t.Fatalf("cancel running: %v %+v", err, got)
	}
	took := time.Since(start)
	if budget.Used() != 0 {
		t.Fatalf("budget used %d when Cancel returned", budget.Used())
	}
	r2, err := m.Reserve(context.Background())
	if err != nil {
		t.Fatalf("place not free when Cancel returned (%v after): %v", took, err)
	}
	r2.Release()
	if final, _ := m.Get(context.Background(), j.ID); final.Status != jobs.Failed || final.Error.Code != "CANCELLED" || final.Result != nil {
		t.Fatalf("final: %+v", final)
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.calls) != 0 {
		t.Fatalf("a cancelled job published %d models", len(pub.calls))
	}
}

// recordingPublisher notes which jobs staged a model.
type recordingPublisher struct {
	mu   sync.Mutex
	jobs map[string]int
}

func (p *recordingPublisher) publish(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jobs[lin.JobID]++
	return "pls-" + lin.JobID, "models/pls-" + lin.JobID + ".npz", nil
}

// TestCancelRaceWithTheEnd: cancels sent at random moments around a
// short job's end either cancel it (and nothing is staged for it) or find
// it done (and its model was staged once): never both, never neither.
func TestCancelRaceWithTheEnd(t *testing.T) {
	pub := &recordingPublisher{jobs: map[string]int{}}
	m := open(t, t.TempDir(), jobs.Options{QueueSize: 1, Publish: pub.publish, Train: trainer.Options{Seed: 1, MaxComponents: 2, Folds: 2}})
	ds := synth.New(synth.Config{Seed: 1}).Dataset(12)
	rng := rand.New(rand.NewPCG(1, 2))
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	var cancelled, finished int
	for i := 0; i < iterations; i++ {
		j, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "o"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		got, err := m.Cancel(context.Background(), j.ID)
		final := wait(t, m, j.ID)
		pub.mu.Lock()
		staged := pub.jobs[j.ID]
		pub.mu.Unlock()
		switch {
		case err == nil:
			cancelled++
			if got.Status != jobs.Failed || final.Status != jobs.Failed || final.Error.Code != "CANCELLED" || staged != 0 {
				t.Fatalf("iteration %d: cancelled, final %+v, staged %d", i, final, staged)
			}
		case errors.Is(err, jobs.ErrJobFinished):
			finished++
			if final.Status != jobs.Done || staged != 1 {
				t.Fatalf("iteration %d: finished, final %s, staged %d", i, final.Status, staged)
			}
		default:
			t.Fatalf("iteration %d: %v", i, err)
		}
	}
	t.Logf("%d cancelled, %d finished first", cancelled, finished)
	if cancelled == 0 || finished == 0 {
		t.Logf("only one side of the race was met in %d iterations", iterations)
	}
}

// TestCancelOnAReadOnlyDisk: a cancel whose record the disk refuses still
// answers the cancelled job (Get says so too), and the record is written
// once the disk takes writes again.
func TestCancelOnAReadOnlyDisk(t *testing.T) {
	dir := t.TempDir()
	disk := newFlakyDisk(t, dir)
	pub := &publisher{block: make(chan struct{})}
	m := openOn(t, disk, disk.Dir, jobs.Options{QueueSize: 1, Publish: pub.publish, RetryInterval: 20 * time.Millisecond,
		Train: trainer.Options{Seed: 1, MaxComponents: 2}})
	first, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 1}).Dataset(30), jobs.Meta{Operator: "o"})
	waitStatus(t, m, first.ID, jobs.Running)
	queued, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: 2}).Dataset(30), jobs.Meta{Operator: "o"})
	if err != nil {
		t.Fatal(err)
	}
	disk.set(true)
	got, err := m.Cancel(context.Background(), queued.ID)
	if err != nil || got.Status != jobs.Failed || got.Error.Code != "CANCELLED" {
		t.Fatalf("cancel on a read-only disk: %v %+v", err, got)
	}
	if rec := readRecord(t, dir, queued.ID); rec.Status != jobs.Queued {
		t.Fatalf("record written on a read-only disk? %s", rec.Status)
	}
	if j, _ := m.Get(context.Background(), queued.ID); j.Status != jobs.Failed {
		t.Fatalf("Get: %s", j.Status)
	}
	disk.set(false)
	deadline := time.Now().Add(5 * time.Second)
	for readRecord(t, dir, queued.ID).Status != jobs.Failed {
		if time.Now().After(deadline) {
			t.Fatal("cancelled record not written after the disk recovered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(pub.block)
}

// TestCancelledJobsStayCancelledAfterRestart: a cancelled job, one
// queued in this process and one queued again after a restart (its data
// set saved in jobs/), reads failed/CANCELLED after the next restart:
// never queued again, never trained, no saved data set left.
func TestCancelledJobsStayCancelledAfterRestart(t *testing.T) {
	dir := t.TempDir()
	opts := func(pub *publisher) jobs.Options {
		return jobs.Options{QueueSize: 4, Publish: pub.publish, Train: trainer.Options{Seed: 1, MaxComponents: 2}}
	}
	submit := func(m *jobs.Manager, seed uint64) string {
		j, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: seed}).Dataset(30), jobs.Meta{Operator: "o"})
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	m, err := start(dir, opts(&publisher{block: make(chan struct{})}))
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, submit(m, 1), jobs.Running) // blocks in Publish
	queued := submit(m, 2)
	blocker, requeued := submit(m, 3), submit(m, 4)
	if _, err := m.Cancel(context.Background(), queued); err != nil {
		t.Fatal(err)
	}
	m.Close(context.Background()) // blocker and requeued are saved for the next start

	m2, err := start(dir, opts(&publisher{block: make(chan struct{})}))
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m2, blocker, jobs.Running) // blocks in Publish; requeued waits
	if _, err := m2.Cancel(context.Background(), requeued); err != nil {
		t.Fatal(err)
	}
	m2.Close(context.Background())

	pub3 := &publisher{}
	m3 := open(t, dir, opts(pub3))
	for _, id := range []string{queued, requeued} {
		j, err := m3.Get(context.Background(), id)
		if err != nil || j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "CANCELLED" {
			t.Fatalf("%s after a restart: %v %+v", id, err, j)
		}
		if _, err := os.Stat(filepath.Join(dir, id+".dataset")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: saved data set left: %v", id, err)
		}
	}
	// Nothing runs: a new job is the only one trained.
	fresh := submit(m3, 5)
	waitStatus(t, m3, fresh, jobs.Done)
	pub3.mu.Lock()
	defer pub3.mu.Unlock()
	if len(pub3.calls) != 1 || pub3.calls[0].JobID != fresh {
		t.Fatalf("published after the restart: %+v", pub3.calls)
	}
}
