package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/platform/atomicfile"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/synth"
)

type publisher struct {
	mu    sync.Mutex
	calls []jobs.Lineage
	block chan struct{} // when set, Publish waits on it

	// entered, when set, is closed as the first Publish begins: the
	// job's training is over and its memory charge no longer moves.
	entered     chan struct{}
	enteredOnce sync.Once
}

func (p *publisher) publish(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
	if p.entered != nil {
		p.enteredOnce.Do(func() { close(p.entered) })
	}
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, lin)
	return "pls-test", "models/pls-test.npz", nil
}

func newManager(t *testing.T, dir string, p *publisher, queue int) *jobs.Manager {
	t.Helper()
	m, err := start(dir, jobs.Options{QueueSize: queue, Publish: p.publish, Train: trainer.Options{Seed: 1, MaxComponents: 8}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func wait(t *testing.T, m *jobs.Manager, id string) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := 0.0
	for {
		j, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Progress < last {
			t.Fatalf("progress went back from %v to %v", last, j.Progress)
		}
		last = j.Progress
		if j.Status == jobs.Done || j.Status == jobs.Failed {
			return j
		}
		if j.Progress >= 1 {
			t.Fatalf("progress 1 while %s", j.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s", j.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestJobRunsToDone(t *testing.T) {
	p := &publisher{}
	m := newManager(t, t.TempDir(), p, 2)
	ds := synth.New(synth.Config{Seed: 1}).Dataset(60)
	j, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "op", Notes: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != jobs.Queued || j.EstimatedSeconds < 1 || j.Samples != 60 {
		t.Fatalf("submitted job: %+v", j)
	}
	done := wait(t, m, j.ID)
	if done.Status != jobs.Done || done.Progress != 1 || done.Result == nil || done.Result.NewVersion != "pls-test" ||
		done.Result.ArtifactPath != "models/pls-test.npz" || !done.Result.R2.Valid[0] || done.Elapsed(time.Now()) <= 0 {
		t.Fatalf("done job: %+v", done)
	}
	if len(p.calls) != 1 || p.calls[0].Operator != "op" {
		t.Fatalf("publish calls: %+v", p.calls)
	}
	if _, err := m.Get(context.Background(), "nope"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestQueueIsBounded(t *testing.T) {
	p := &publisher{block: make(chan struct{})}
	m := newManager(t, t.TempDir(), p, 1)
	ds := synth.New(synth.Config{Seed: 2}).Dataset(40)
	first, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the first job left the queue for the worker.
	for {
		j, _ := m.Get(context.Background(), first.ID)
		if j.Status == jobs.Running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "b"}); err != nil {
		t.Fatalf("second job (fills the queue of 1): %v", err)
	}
	if _, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "c"}); !errors.Is(err, jobs.ErrQueueFull) {
		t.Fatalf("third job: %v, want ErrQueueFull", err)
	}
	if got := m.CountByStatus(); len(got) != 2 || got[jobs.Running] != 1 || got[jobs.Queued] != 1 {
		t.Fatalf("jobs by status %v, want one running and one queued", got)
	}
	close(p.block)
	wait(t, m, first.ID)
}

func TestRestartMarksUnfinishedJobsInterrupted(t *testing.T) {
	dir := t.TempDir()
	// Records as a killed process leaves them: one running, one queued,
	// one done, plus a temp file from an interrupted write.
	started := time.Now().Add(-time.Minute)
	records := []jobs.Job{
		{ID: "running-1", Status: jobs.Running, Progress: 0.4, SubmittedAt: started, StartedAt: &started},
		{ID: "queued-1", Status: jobs.Queued, SubmittedAt: started},
		{ID: "done-1", Status: jobs.Done, Progress: 1, SubmittedAt: started, StartedAt: &started, FinishedAt: &started,
			Result: &jobs.Result{NewVersion: "v1", ArtifactPath: "models/v1.npz"}},
	}
	for _, r := range records {
		b, _ := json.Marshal(r)
		os.WriteFile(filepath.Join(dir, r.ID+".json"), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, atomicfile.TempPrefix+"x.json.123"), []byte("{"), 0o644)

	m := newManager(t, dir, &publisher{}, 2)
	for _, tc := range []struct {
		id     string
		status jobs.Status
		code   string
	}{{"running-1", jobs.Failed, "INTERRUPTED"}, {"queued-1", jobs.Failed, "INTERRUPTED"}, {"done-1", jobs.Done, ""}} {
		j, err := m.Get(context.Background(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		code := ""
		if j.Error != nil {
			code = j.Error.Code
		}
		if j.Status != tc.status || code != tc.code {
			t.Errorf("%s: %s %s, want %s %s", tc.id, j.Status, code, tc.status, tc.code)
		}
	}
	// An interrupted job keeps the progress it had and says what it was doing.
	for id, want := range map[string]struct {
		progress float64
		state    string
	}{"running-1": {0.4, "running"}, "queued-1": {0, "queued"}} {
		j, _ := m.Get(context.Background(), id)
		if j.Progress != want.progress || j.Error == nil || !strings.Contains(j.Error.Message, "while this job was "+want.state) {
			t.Errorf("%s after restart: progress %v, error %+v", id, j.Progress, j.Error)
		}
	}
	// The verdict is on disk: a second restart reads the same.
	b, _ := os.ReadFile(filepath.Join(dir, "running-1.json"))
	var j jobs.Job
	json.Unmarshal(b, &j)
	if j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" {
		t.Errorf("record on disk: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, atomicfile.TempPrefix+"x.json.123")); !os.IsNotExist(err) {
		t.Errorf("temp file left behind")
	}
}

func TestFailedTrainingIsRecorded(t *testing.T) {
	m := newManager(t, t.TempDir(), &publisher{}, 2)
	// A constant label: the trainer refuses (R2 is undefined), the job
	// fails with a code instead of taking anything down. (Options that
	// cannot apply, such as too few rows, are refused at submit.)
	ds := synth.New(synth.Config{Seed: 3}).Dataset(30)
	for i := 0; i < ds.Len(); i++ {
		ds.Labels(i)[1] = 4
	}
	j, err := m.Submit(context.Background(), ds, jobs.Meta{Operator: "a"})
	if err != nil {
		t.Fatal(err)
	}
	done := wait(t, m, j.ID)
	if done.Status != jobs.Failed || done.Error == nil || done.Error.Code == "" || done.Error.Message == "" || done.Result != nil {
		t.Fatalf("job: %+v", done)
	}
}
