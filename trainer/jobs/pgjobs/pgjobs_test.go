package pgjobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"ramanserve/platform/pgtest"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobstoretest"
	"ramanserve/trainer/jobs/pgjobs"
)

// newStore is a store on a fresh database, and the database's URL.
func newStore(t *testing.T) (*pgjobs.Store, string) {
	t.Helper()
	url := pgtest.Database(t)
	return pgjobs.New(pgtest.Open(t, url)), url
}

func TestStoreContract(t *testing.T) {
	jobstoretest.RunStore(t, func(t *testing.T) func(t *testing.T) jobs.Store {
		url := pgtest.Database(t)
		return func(t *testing.T) jobs.Store { return pgjobs.New(pgtest.Open(t, url)) }
	})
}

func TestUploadSpoolContract(t *testing.T) {
	jobstoretest.RunUploadSpool(t, func(t *testing.T) func(t *testing.T) jobs.UploadSpool {
		url := pgtest.Database(t)
		return func(t *testing.T) jobs.UploadSpool { return pgjobs.New(pgtest.Open(t, url)) }
	})
}

func TestKeyStoreContract(t *testing.T) {
	jobstoretest.RunKeyStore(t, func(t *testing.T) func(t *testing.T) jobs.KeyStore {
		url := pgtest.Database(t)
		return func(t *testing.T) jobs.KeyStore { return pgjobs.New(pgtest.Open(t, url)) }
	})
}

// TestReplicasClaimAKeyOnce: replicas, each with its own pool on one
// database, claim one key at once; one wins and every one is told its job.
func TestReplicasClaimAKeyOnce(t *testing.T) {
	url := pgtest.Database(t)
	const replicas = 4
	stores := make([]*pgjobs.Store, replicas)
	for i := range stores {
		stores[i] = pgjobs.New(pgtest.Open(t, url))
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	type result struct {
		job, held string
		won       bool
		err       error
	}
	results := make(chan result, replicas)
	for i, s := range stores {
		go func() {
			job := "job-" + string(rune('a'+i))
			held, won, err := s.ClaimKey(context.Background(), jobs.KeyRecord{Key: "k", RequestHash: "h", JobID: job, CreatedAt: at}, jobs.DefaultKeyLimits())
			results <- result{job, held.JobID, won, err}
		}()
	}
	var winner string
	var all []result
	for range replicas {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.won {
			if winner != "" {
				t.Fatalf("two replicas claimed one key: %s and %s", winner, r.job)
			}
			winner = r.job
		}
		all = append(all, r)
	}
	if winner == "" {
		t.Fatal("no replica claimed the key")
	}
	for _, r := range all {
		if r.held != winner {
			t.Fatalf("replica of %s was told the key holds %s; %s won", r.job, r.held, winner)
		}
	}
}

// TestReplicasSeeEachOthersWrites: two replicas, each with its own pool on
// one database, read what the other wrote.
func TestReplicasSeeEachOthersWrites(t *testing.T) {
	ctx := context.Background()
	a, url := newStore(t)
	b := pgjobs.New(pgtest.Open(t, url))
	j := &jobs.Job{ID: "j1", Status: jobs.Queued, SubmittedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	if err := a.Save(ctx, j); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := b.LoadAll(ctx)
	if err != nil || len(skipped) != 0 || len(recs) != 1 || recs[0].ID != "j1" || recs[0].Status != jobs.Queued {
		t.Fatalf("replica b loads %v, skipped %v, %v", recs, skipped, err)
	}
	if err := b.Put(ctx, "j1", strings.NewReader("data set")); err != nil {
		t.Fatal(err)
	}
	if got := readUpload(t, a, "j1"); got != "data set" {
		t.Fatalf("replica a reads %q", got)
	}
	if err := a.Remove(ctx, "j1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Open(ctx, "j1"); err == nil {
		t.Fatal("replica b still opens the data set replica a removed")
	}
}

// TestLoadAllSkipsWhatIsNotARecord: rows that are not a job's record (not
// JSON, another job's, over the size bound) are reported and skipped; the
// good record beside them loads.
func TestLoadAllSkipsWhatIsNotARecord(t *testing.T) {
	ctx := context.Background()
	s, url := newStore(t)
	if err := s.Save(ctx, &jobs.Job{ID: "good", Status: jobs.Done}); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `INSERT INTO training_jobs (job_id, status, record) VALUES
		('broken', 'queued', convert_to('{', 'UTF8')),
		('other', 'queued', convert_to('{"job_id":"good"}', 'UTF8')),
		('big', 'queued', convert_to('"' || repeat('x', 17 << 20) || '"', 'UTF8'))`)
	recs, skipped, err := s.LoadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != "good" {
		t.Fatalf("records %v, want the good one only", recs)
	}
	if len(skipped) != 3 {
		t.Fatalf("skipped %v, want the three bad rows", skipped)
	}
	for _, e := range skipped {
		t.Log(e)
	}
}

// TestRecordIsTheJobsJSON: the stored record is the JSON jobfiles writes,
// including a NUL an operator typed (which jsonb would refuse), and the
// status column follows the record.
func TestRecordIsTheJobsJSON(t *testing.T) {
	ctx := context.Background()
	s, url := newStore(t)
	j := &jobs.Job{ID: "nul", Status: jobs.Running, Meta: jobs.Meta{Notes: "a\x00b <&>"}}
	if err := s.Save(ctx, j); err != nil {
		t.Fatal(err)
	}
	var (
		status string
		record []byte
	)
	pool := pgtest.Open(t, url)
	if err := pool.QueryRow(ctx, `SELECT status, record FROM training_jobs WHERE job_id = 'nul'`).Scan(&status, &record); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(j)
	if status != string(jobs.Running) || !bytes.Equal(record, want) {
		t.Fatalf("stored status %q, record %s; want %q, %s", status, record, jobs.Running, want)
	}
	recs, _, err := s.LoadAll(ctx)
	if err != nil || len(recs) != 1 || recs[0].Meta.Notes != j.Meta.Notes {
		t.Fatalf("loaded %v, %v", recs, err)
	}
}

// TestSaveLeavesTheLease: the lease columns are the runner's; Save
// replaces the record and its status, never them.
func TestSaveLeavesTheLease(t *testing.T) {
	ctx := context.Background()
	s, url := newStore(t)
	j := &jobs.Job{ID: "j", Status: jobs.Queued}
	if err := s.Save(ctx, j); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `UPDATE training_jobs SET lease_owner = 'replica-1', lease_until = now() + interval '1 minute', attempts = 2`)
	j.Status = jobs.Running
	if err := s.Save(ctx, j); err != nil {
		t.Fatal(err)
	}
	var (
		owner    string
		attempts int
		status   string
	)
	err := pgtest.Open(t, url).QueryRow(ctx, `SELECT lease_owner, attempts, status FROM training_jobs WHERE job_id = 'j'`).Scan(&owner, &attempts, &status)
	if err != nil || owner != "replica-1" || attempts != 2 || status != string(jobs.Running) {
		t.Fatalf("after Save: owner %q, attempts %d, status %q, %v", owner, attempts, status, err)
	}
}

// TestOpenReadsOnePut: a reader opened before another Put replaces the
// data set reads the bytes it opened, whole.
func TestOpenReadsOnePut(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	before := bytes.Repeat([]byte("before.."), 3<<20/8+5) // three chunks and a bit
	if err := s.Put(ctx, "a", bytes.NewReader(before)); err != nil {
		t.Fatal(err)
	}
	rc, size, err := s.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a", strings.NewReader("after")); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(head, rest...); size != int64(len(before)) || !bytes.Equal(got, before) {
		t.Fatalf("read %d bytes (size %d) of the %d put before", len(got), size, len(before))
	}
	if got := readUpload(t, s, "a"); got != "after" {
		t.Fatalf("a new reader reads %q", got)
	}
}

// TestIDsThatNameNoRow: an id the database cannot key a row by is refused
// by every call with an error of this package.
func TestIDsThatNameNoRow(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, id := range []string{"", "a\x00b", "\xff"} {
		if err := s.Save(ctx, &jobs.Job{ID: id}); err == nil || !strings.Contains(err.Error(), "not a job id") {
			t.Errorf("Save %q: %v", id, err)
		}
		if err := s.Put(ctx, id, strings.NewReader("x")); err == nil {
			t.Errorf("Put %q succeeded", id)
		}
		if rc, _, err := s.Open(ctx, id); err == nil {
			rc.Close()
			t.Errorf("Open %q succeeded", id)
		}
		if err := s.Remove(ctx, id); err == nil {
			t.Errorf("Remove %q succeeded", id)
		}
	}
}

func readUpload(t *testing.T, s *pgjobs.Store, id string) string {
	t.Helper()
	rc, size, err := s.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || int64(len(b)) != size {
		t.Fatalf("read %s: %d bytes of %d, %v", id, len(b), size, err)
	}
	return string(b)
}

func TestLeaseStoreContract(t *testing.T) {
	jobstoretest.RunLeaseStore(t, func(t *testing.T) func(t *testing.T) jobs.LeaseStore {
		url := pgtest.Database(t)
		return func(t *testing.T) jobs.LeaseStore { return pgjobs.New(pgtest.Open(t, url)) }
	})
}
