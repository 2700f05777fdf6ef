package jobstoretest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"ramanserve/trainer/jobs"
)

// RunLeaseStore runs the contract of jobs.LeaseStore. Leases that must run
// out are a few hundred milliseconds long; the tests wait for them with a
// deadline, never for a fixed time.
func RunLeaseStore(t *testing.T, newStorage NewStorage[jobs.LeaseStore]) {
	ctx := context.Background()
	const long = time.Minute
	markRunning := func(j *jobs.Job) { j.Status = jobs.Running }

	t.Run("ClaimTakesTheOldestQueuedJobOnce", func(t *testing.T) {
		s := newStorage(t)(t)
		mustSave(t, s, queuedJob("first", 0))
		mustSave(t, s, queuedJob("second", 1))
		j := mustClaim(t, s, "a", long)
		if j.ID != "first" || j.Status != jobs.Running || j.Attempts != 1 {
			t.Fatalf("first claim: %s %s attempts %d, want first running attempts 1", j.ID, j.Status, j.Attempts)
		}
		if j := mustClaim(t, s, "b", long); j.ID != "second" {
			t.Fatalf("second claim took %s", j.ID)
		}
		if _, err := s.Claim(ctx, "c", long, markRunning); !errors.Is(err, jobs.ErrNothingToClaim) {
			t.Fatalf("third claim: %v, want ErrNothingToClaim", err)
		}
		stored, err := s.Load(ctx, "first")
		if err != nil || stored.Status != jobs.Running || stored.Attempts != 1 {
			t.Fatalf("Load after the claim: %+v, %v", stored, err)
		}
	})
	t.Run("OnlyTheOwnerRenewsAndSaves", func(t *testing.T) {
		s := newStorage(t)(t)
		mustSave(t, s, queuedJob("a", 0))
		j := mustClaim(t, s, "owner", long)
		if err := s.Renew(ctx, "a", "owner", long); err != nil {
			t.Fatalf("owner's renewal: %v", err)
		}
		if err := s.Renew(ctx, "a", "stranger", long); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("stranger's renewal: %v, want ErrLeaseLost", err)
		}
		j.Progress = 0.5
		if err := s.SaveLeased(ctx, j, "stranger"); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("stranger's save: %v, want ErrLeaseLost", err)
		}
		if err := s.SaveLeased(ctx, j, "owner"); err != nil {
			t.Fatalf("owner's save: %v", err)
		}
		j.Status = jobs.Done
		if err := s.SaveLeased(ctx, j, "owner"); err != nil {
			t.Fatalf("owner's final save: %v", err)
		}
		// A finished job is nobody's: no renewal, no second final save.
		if err := s.Renew(ctx, "a", "owner", long); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("renewal of a done job: %v, want ErrLeaseLost", err)
		}
		if err := s.SaveLeased(ctx, j, "owner"); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("save of a done job: %v, want ErrLeaseLost", err)
		}
		if _, err := s.Claim(ctx, "b", long, markRunning); !errors.Is(err, jobs.ErrNothingToClaim) {
			t.Fatalf("claim of a done job: %v, want ErrNothingToClaim", err)
		}
	})
	t.Run("AnExpiredLeaseIsTakenOver", func(t *testing.T) {
		s := newStorage(t)(t)
		mustSave(t, s, queuedJob("a", 0))
		dead := mustClaim(t, s, "dead", 300*time.Millisecond)
		var j *jobs.Job
		waitFor(t, func() bool {
			var err error
			j, err = s.Claim(ctx, "heir", long, markRunning)
			if err != nil && !errors.Is(err, jobs.ErrNothingToClaim) {
				t.Fatal(err)
			}
			return err == nil
		})
		if j.ID != "a" || j.Attempts != 2 {
			t.Fatalf("take-over: %s attempts %d, want a attempts 2", j.ID, j.Attempts)
		}
		if err := s.Renew(ctx, "a", "dead", long); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("dead runner's renewal: %v, want ErrLeaseLost", err)
		}
		dead.Status = jobs.Done
		if err := s.SaveLeased(ctx, dead, "dead"); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("dead runner's save: %v, want ErrLeaseLost", err)
		}
	})
	t.Run("ARenewedLeaseIsNotTakenOver", func(t *testing.T) {
		s := newStorage(t)(t)
		mustSave(t, s, queuedJob("a", 0))
		mustClaim(t, s, "owner", 300*time.Millisecond)
		if err := s.Renew(ctx, "a", "owner", long); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, "b", long, markRunning); !errors.Is(err, jobs.ErrNothingToClaim) {
			t.Fatalf("claim of a renewed job: %v, want ErrNothingToClaim", err)
		}
	})
	t.Run("RacingClaimersGetOneJobEach", func(t *testing.T) {
		open := newStorage(t)
		s := open(t)
		mustSave(t, s, queuedJob("only", 0))
		const claimers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  int
			errs []error
		)
		for range claimers {
			other := open(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := other.Claim(ctx, "racer", long, markRunning)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case !errors.Is(err, jobs.ErrNothingToClaim):
					errs = append(errs, err)
				}
			}()
		}
		wg.Wait()
		if won != 1 || len(errs) != 0 {
			t.Fatalf("%d of %d claimers won one job (errors %v)", won, claimers, errs)
		}
	})
	t.Run("AHeldJobIsNotClaimedUntilItsLeaseRunsOut", func(t *testing.T) {
		s := newStorage(t)(t)
		if err := s.Hold(ctx, queuedJob("held", 0), "owner", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, "b", long, markRunning); !errors.Is(err, jobs.ErrNothingToClaim) {
			t.Fatalf("claim of a held job: %v, want ErrNothingToClaim", err)
		}
		waitFor(t, func() bool {
			_, err := s.Claim(ctx, "b", long, markRunning)
			return err == nil
		})
	})
	t.Run("UpdateDropsTheLeaseOfAFinishedJob", func(t *testing.T) {
		s := newStorage(t)(t)
		mustSave(t, s, queuedJob("a", 0))
		mustClaim(t, s, "owner", long)
		refused := errors.New("refused")
		if _, err := s.Update(ctx, "a", func(*jobs.Job) error { return refused }); !errors.Is(err, refused) {
			t.Fatalf("refused update: %v", err)
		}
		if err := s.Renew(ctx, "a", "owner", long); err != nil {
			t.Fatalf("renewal after a refused update: %v", err)
		}
		j, err := s.Update(ctx, "a", func(j *jobs.Job) error { j.Status = jobs.Failed; return nil })
		if err != nil || j.Status != jobs.Failed {
			t.Fatalf("update: %+v, %v", j, err)
		}
		if err := s.Renew(ctx, "a", "owner", long); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("renewal after the job was failed: %v, want ErrLeaseLost", err)
		}
		if _, err := s.Update(ctx, "missing", func(*jobs.Job) error { return nil }); !errors.Is(err, jobs.ErrJobNotFound) {
			t.Fatalf("update of a missing job: %v, want ErrJobNotFound", err)
		}
		if _, err := s.Load(ctx, "missing"); !errors.Is(err, jobs.ErrJobNotFound) {
			t.Fatalf("load of a missing job: %v, want ErrJobNotFound", err)
		}
	})
}

func mustClaim(t *testing.T, s jobs.LeaseStore, owner string, lease time.Duration) *jobs.Job {
	t.Helper()
	j, err := s.Claim(context.Background(), owner, lease, func(j *jobs.Job) { j.Status = jobs.Running })
	if err != nil {
		t.Fatalf("claim by %s: %v", owner, err)
	}
	return j
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
