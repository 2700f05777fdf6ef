package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/membudget"
	"ramanserve/trainer/synth"
)

// start opens the job files in dir and starts a Manager on them.
func start(dir string, opts jobs.Options) (*jobs.Manager, error) {
	files, err := jobfiles.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	return jobs.New(context.Background(), files, files, opts)
}

// open starts a Manager on the job files in dir, closed when the test ends.
func open(t *testing.T, dir string, opts jobs.Options) *jobs.Manager {
	t.Helper()
	files, err := jobfiles.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return openOn(t, files, files, opts)
}

// openOn starts a Manager on records and uploads, closed when the test ends.
func openOn(t *testing.T, records jobs.Store, uploads jobs.UploadSpool, opts jobs.Options) *jobs.Manager {
	t.Helper()
	if opts.Train.MaxComponents == 0 {
		opts.Train = trainer.Options{Seed: 1, MaxComponents: 8}
	}
	m, err := jobs.New(context.Background(), records, uploads, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func waitStatus(t *testing.T, m *jobs.Manager, id string, want jobs.Status) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, j.Status, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// chargedDataset parses nothing: it is a synthetic set charged to r the
// way the CSV reader charges it.
func chargedDataset(t *testing.T, r trainer.Charger, seed uint64, n int) *trainer.Dataset {
	t.Helper()
	src := synth.New(synth.Config{Seed: seed}).Dataset(n)
	ds := trainer.NewChargedDataset(src.Features(), src.NumTargets(), r)
	for i := 0; i < n; i++ {
		x, y, err := ds.TryAppend(src.ScanID(i))
		if err != nil {
			t.Fatal(err)
		}
		copy(x, src.Row(i))
		copy(y, src.Labels(i))
	}
	return ds
}

// TestReservationHoldsTheSlot: reservations count against the queue
// before any data exists, a refused one changes nothing, and Release (a
// failed upload) gives the slot and the memory back.
func TestReservationHoldsTheSlot(t *testing.T) {
	budget := membudget.New(1 << 30)
	m := open(t, t.TempDir(), jobs.Options{QueueSize: 1, Publish: (&publisher{}).publish, Budget: budget})
	ctx := context.Background()
	a, err := m.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Reserve(ctx) // the running slot and one waiting slot
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reserve(ctx); !errors.Is(err, jobs.ErrQueueFull) {
		t.Fatalf("third reservation: %v, want ErrQueueFull", err)
	}
	if !a.TryAcquire(1000) || budget.Used() != 1000 {
		t.Fatalf("charge through the reservation: used %d", budget.Used())
	}
	a.Release()
	a.Release() // idempotent
	if budget.Used() != 0 {
		t.Fatalf("budget used %d after Release", budget.Used())
	}
	if a.TryAcquire(1) {
		t.Fatal("a released reservation still charges")
	}
	c, err := m.Reserve(ctx)
	if err != nil {
		t.Fatalf("the released slot was not free again: %v", err)
	}
	c.Release()
	b.Release()
}

// TestJobReleasesItsMemoryWhenItEnds: the data set's charge moves from the
// upload to the job and returns to the budget when the job is done, and
// the extra workers' charge with it.
func TestJobReleasesItsMemoryWhenItEnds(t *testing.T) {
	budget := membudget.New(1 << 30)
	m := open(t, t.TempDir(), jobs.Options{QueueSize: 2, Publish: (&publisher{}).publish, Budget: budget})
	r, err := m.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ds := chargedDataset(t, r, 1, 60)
	if budget.Used() != ds.Charged() || ds.Charged() < ds.NumericBytes()*2 {
		t.Fatalf("used %d, charged %d, matrix %d", budget.Used(), ds.Charged(), ds.NumericBytes())
	}
	j, err := m.SubmitReserved(context.Background(), r, ds, jobs.Meta{Operator: "op"})
	if err != nil {
		t.Fatal(err)
	}
	r.Release() // after submit: a no-op, the job owns the charge
	if budget.Used() == 0 {
		t.Fatal("the job does not hold its data set's charge")
	}
	if done := wait(t, m, j.ID); done.Status != jobs.Done {
		t.Fatalf("job: %+v", done)
	}
	deadline := time.Now().Add(5 * time.Second)
	for budget.Used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("budget used %d after the job ended", budget.Used())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCloseInterruptsRunningAndKeepsQueued: Close records the running job
// INTERRUPTED (not the context error it surfaces as), never starts the
// queued one, saves its data set, and the next New runs it to done and
// deletes the saved data set.
func TestCloseInterruptsRunningAndKeepsQueued(t *testing.T) {
	dir := t.TempDir()
	pub := &publisher{block: make(chan struct{})} // the running job waits in Publish
	budget := membudget.New(1 << 30)
	m, err := start(dir, jobs.Options{QueueSize: 2, Publish: pub.publish, Budget: budget,
		Train: trainer.Options{Seed: 1, MaxComponents: 8}})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(seed uint64) string {
		r, err := m.Reserve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		j, err := m.SubmitReserved(context.Background(), r, chargedDataset(t, r, seed, 60), jobs.Meta{Operator: "op"})
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	running := submit(1)
	waitStatus(t, m, running, jobs.Running)
	queued := submit(2)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	j, _ := m.Get(context.Background(), running)
	if j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" || !strings.Contains(j.Error.Message, "shut down") {
		t.Fatalf("running job after Close: %+v %+v", j, j.Error)
	}
	if q, _ := m.Get(context.Background(), queued); q.Status != jobs.Queued {
		t.Fatalf("queued job after Close: %s", q.Status)
	}
	if budget.Used() != 0 {
		t.Fatalf("budget used %d after Close", budget.Used())
	}
	onDisk := readRecord(t, dir, queued)
	if onDisk.Status != jobs.Queued {
		t.Fatalf("queued record on disk: %s", onDisk.Status)
	}
	spool := filepath.Join(dir, queued+".dataset")
	if _, err := os.Stat(spool); err != nil {
		t.Fatalf("queued job's data set not saved: %v", err)
	}
	if rec := readRecord(t, dir, running); rec.Error == nil || rec.Error.Code != "INTERRUPTED" {
		t.Fatalf("running record on disk: %+v", rec)
	}

	m2 := open(t, dir, jobs.Options{QueueSize: 2, Publish: (&publisher{}).publish, Budget: budget})
	if done := wait(t, m2, queued); done.Status != jobs.Done || done.Samples != 60 {
		t.Fatalf("re-queued job: %+v %+v", done, done.Error)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(spool); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the saved data set of a finished job was not deleted")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCloseStartsNoQueuedJob: a job queued behind a running one is never
// picked up once Close began, however the worker's wake-up and the
// shutdown interleave.
func TestCloseStartsNoQueuedJob(t *testing.T) {
	for i := 0; i < 6; i++ {
		dir := t.TempDir()
		var published atomic.Int32
		m, err := start(dir, jobs.Options{QueueSize: 4, Train: trainer.Options{Seed: 1, MaxComponents: 2},
			Publish: func(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
				published.Add(1)
				<-ctx.Done() // the first job holds the worker until Close
				return "", "", ctx.Err()
			}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for k := 0; k < 3; k++ {
			j, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: uint64(k + 1)}).Dataset(30), jobs.Meta{Operator: "o"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
		if i%2 == 0 {
			waitStatus(t, m, ids[0], jobs.Running)
		}
		m.Close(context.Background())
		if n := published.Load(); n > 1 {
			t.Fatalf("%d jobs reached Publish", n)
		}
		startedAfter := 0
		for _, id := range ids {
			j, _ := m.Get(context.Background(), id)
			if j.Status == jobs.Running {
				t.Fatalf("job %s still running after Close", id)
			}
			if j.Status != jobs.Queued {
				startedAfter++
			}
		}
		// At most the job running when Close began ended; the others stay queued.
		if startedAfter > 1 {
			t.Fatalf("%d jobs left the queue around Close", startedAfter)
		}
	}
}

// TestRestartWithBadSpool: a queued record whose saved data set is missing,
// truncated or edited by hand fails INTERRUPTED saying why, and only the
// spools of jobs that ended are deleted.
func TestRestartWithBadSpool(t *testing.T) {
	dir := t.TempDir()
	m, err := start(dir, jobs.Options{QueueSize: 4, Publish: (&publisher{block: make(chan struct{})}).publish,
		Train: trainer.Options{Seed: 1, MaxComponents: 8}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for k := 0; k < 4; k++ {
		j, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: uint64(k + 1)}).Dataset(40), jobs.Meta{Operator: "o"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	waitStatus(t, m, ids[0], jobs.Running)
	m.Close(context.Background())
	edited, truncated, missing := ids[1], ids[2], ids[3]
	path := func(id string) string { return filepath.Join(dir, id+".dataset") }
	b, _ := os.ReadFile(path(edited))
	b[len(b)/2] ^= 0x40
	os.WriteFile(path(edited), b, 0o644)
	b, _ = os.ReadFile(path(truncated))
	os.WriteFile(path(truncated), b[:len(b)-100], 0o644)
	os.Remove(path(missing))
	stray := filepath.Join(dir, "not-a-job.dataset")
	os.WriteFile(stray, []byte("operator's file"), 0o644)

	m2 := open(t, dir, jobs.Options{QueueSize: 4, Publish: (&publisher{}).publish})
	for id, want := range map[string]string{edited: "checksum", truncated: "could not be read", missing: "was not saved"} {
		j, _ := m2.Get(context.Background(), id)
		if j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" || !strings.Contains(j.Error.Message, want) {
			t.Errorf("job %s: %s %+v, want INTERRUPTED mentioning %q", id, j.Status, j.Error, want)
		}
		if _, err := os.Stat(path(id)); !os.IsNotExist(err) {
			t.Errorf("spool of failed job %s left behind", id)
		}
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("a .dataset file no job owns was deleted: %v", err)
	}
}

// TestRestartRefusesSpoolOverBudget: a saved data set that no longer fits
// the (smaller) budget fails its job, naming the budget, and charges
// nothing.
func TestRestartRefusesSpoolOverBudget(t *testing.T) {
	dir := t.TempDir()
	m, _ := start(dir, jobs.Options{QueueSize: 2, Publish: (&publisher{block: make(chan struct{})}).publish,
		Train: trainer.Options{Seed: 1, MaxComponents: 8}})
	first, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 1}).Dataset(40), jobs.Meta{Operator: "o"})
	waitStatus(t, m, first.ID, jobs.Running)
	second, _ := m.Submit(context.Background(), synth.New(synth.Config{Seed: 2}).Dataset(200), jobs.Meta{Operator: "o"})
	m.Close(context.Background())
	budget := membudget.New(1 << 20)
	m2 := open(t, dir, jobs.Options{QueueSize: 2, Publish: (&publisher{}).publish, Budget: budget})
	j, _ := m2.Get(context.Background(), second.ID)
	if j.Status != jobs.Failed || j.Error == nil || !strings.Contains(j.Error.Message, "memory budget") {
		t.Fatalf("job over the budget: %s %+v", j.Status, j.Error)
	}
	if budget.Used() != 0 {
		t.Fatalf("budget used %d", budget.Used())
	}
}

// flakyDisk is the job files of a folder whose record writes fail (EROFS)
// while off is set, as on a read-only or full file system.
type flakyDisk struct {
	*jobfiles.Dir
	mu  sync.Mutex
	off bool
}

func newFlakyDisk(t *testing.T, dir string) *flakyDisk {
	t.Helper()
	files, err := jobfiles.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &flakyDisk{Dir: files}
}

func (d *flakyDisk) set(off bool) { d.mu.Lock(); d.off = off; d.mu.Unlock() }

func (d *flakyDisk) Save(ctx context.Context, j *jobs.Job) error {
	d.mu.Lock()
	off := d.off
	d.mu.Unlock()
	if off {
		return &os.PathError{Op: "open", Path: j.ID + ".json", Err: syscall.EROFS}
	}
	return d.Dir.Save(ctx, j)
}

// TestUnwritableRecordKeepsTheRealReason: a job fails while its record
// cannot be written. Get reports the real reason at once, the record on
// disk still reads running, and once the disk takes writes again the
// retry writes the failure with its reason.
func TestUnwritableRecordKeepsTheRealReason(t *testing.T) {
	dir := t.TempDir()
	disk := newFlakyDisk(t, dir)
	pubErr := errors.New("publish: no space left on device")
	m := openOn(t, disk, disk.Dir, jobs.Options{QueueSize: 1, RetryInterval: 50 * time.Millisecond,
		Publish: func(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
			disk.set(true) // the disk goes read-only while the job runs
			return "", "", pubErr
		}})
	j, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: 1}).Dataset(40), jobs.Meta{Operator: "o"})
	if err != nil {
		t.Fatal(err)
	}
	failed := waitStatus(t, m, j.ID, jobs.Failed)
	if failed.Error == nil || !strings.Contains(failed.Error.Message, "no space left") {
		t.Fatalf("reported failure: %+v", failed.Error)
	}
	time.Sleep(200 * time.Millisecond) // several retries, all refused
	if rec := readRecord(t, dir, j.ID); rec.Status != jobs.Running {
		t.Fatalf("record on the read-only disk: %s", rec.Status)
	}
	disk.set(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec := readRecord(t, dir, j.ID)
		if rec.Status == jobs.Failed {
			if rec.Error == nil || !strings.Contains(rec.Error.Message, "no space left") {
				t.Fatalf("record written without the reason: %+v", rec.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record still %s after the disk took writes again", rec.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readRecord(t *testing.T, dir, id string) jobs.Job {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var j jobs.Job
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j
}
