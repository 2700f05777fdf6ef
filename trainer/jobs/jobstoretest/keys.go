package jobstoretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"ramanserve/trainer/jobs"
)

// RunKeyStore runs the contract of jobs.KeyStore. Concurrent claims go
// through one store; an implementation shared by processes adds its own
// test of claims through several.
func RunKeyStore(t *testing.T, newStorage NewStorage[jobs.KeyStore]) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	limits := jobs.KeyLimits{TTL: 24 * time.Hour, Max: 100}
	rec := func(key, hash, job string, at time.Time) jobs.KeyRecord {
		return jobs.KeyRecord{Key: key, RequestHash: hash, JobID: job, CreatedAt: at}
	}
	claim := func(t *testing.T, s jobs.KeyStore, r jobs.KeyRecord, l jobs.KeyLimits) (jobs.KeyRecord, bool) {
		t.Helper()
		held, ok, err := s.ClaimKey(ctx, r, l)
		if err != nil {
			t.Fatalf("ClaimKey %q: %v", r.Key, err)
		}
		return held, ok
	}
	same := func(t *testing.T, got, want jobs.KeyRecord) {
		t.Helper()
		if got.Key != want.Key || got.RequestHash != want.RequestHash || got.JobID != want.JobID || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("held %+v, want %+v", got, want)
		}
	}
	t.Run("TheFirstClaimHoldsTheKey", func(t *testing.T) {
		s := newStorage(t)(t)
		first := rec("k1", "h1", "job-1", t0)
		if held, ok := claim(t, s, first, limits); !ok {
			t.Fatalf("the first claim of a key was not claimed: %+v", held)
		}
		held, ok := claim(t, s, rec("k1", "h2", "job-2", t0.Add(time.Minute)), limits)
		if ok {
			t.Fatal("a second claim of a held key was claimed")
		}
		same(t, held, first)
		if _, ok := claim(t, s, rec("k2", "h1", "job-3", t0.Add(time.Minute)), limits); !ok {
			t.Fatal("another key was not claimed")
		}
	})
	t.Run("ReopenKeepsTheKeys", func(t *testing.T) {
		open := newStorage(t)
		first := rec("k1", "h1", "job-1", t0)
		claim(t, open(t), first, limits)
		held, ok := claim(t, open(t), rec("k1", "h1", "job-2", t0.Add(time.Hour)), limits)
		if ok {
			t.Fatal("after a reopen, a held key was claimed again")
		}
		same(t, held, first)
	})
	t.Run("AKeyExpiresAfterTheTTL", func(t *testing.T) {
		s := newStorage(t)(t)
		claim(t, s, rec("k1", "h1", "job-1", t0), limits)
		if _, ok := claim(t, s, rec("k1", "h2", "job-2", t0.Add(limits.TTL-time.Second)), limits); ok {
			t.Fatal("a key was claimed again before its TTL ran out")
		}
		later := rec("k1", "h2", "job-2", t0.Add(limits.TTL+time.Second))
		held, ok := claim(t, s, later, limits)
		if !ok {
			t.Fatalf("a key older than the TTL was not claimed again: held %+v", held)
		}
		same(t, held, later)
	})
	t.Run("TheNumberOfKeysIsBounded", func(t *testing.T) {
		s := newStorage(t)(t)
		small := jobs.KeyLimits{TTL: limits.TTL, Max: 3}
		for i := range 5 {
			claim(t, s, rec(fmt.Sprintf("k%d", i), "h", fmt.Sprintf("job-%d", i), t0.Add(time.Duration(i)*time.Second)), small)
		}
		at := t0.Add(time.Minute)
		for i := range 5 {
			_, ok := claim(t, s, rec(fmt.Sprintf("k%d", i), "h", "again", at), jobs.KeyLimits{TTL: limits.TTL, Max: 100})
			if dropped := i < 2; ok != dropped {
				t.Fatalf("key k%d: claimed again %v, want %v (the 2 oldest of 5 go beyond a bound of 3)", i, ok, dropped)
			}
		}
	})
	t.Run("ForgetRemovesOnlyTheNamedJobsClaim", func(t *testing.T) {
		s := newStorage(t)(t)
		first := rec("k1", "h1", "job-1", t0)
		claim(t, s, first, limits)
		if err := s.ForgetKey(ctx, "k1", "job-other"); err != nil {
			t.Fatal(err)
		}
		if _, ok := claim(t, s, rec("k1", "h1", "job-2", t0.Add(time.Second)), limits); ok {
			t.Fatal("ForgetKey of another job's claim removed it")
		}
		if err := s.ForgetKey(ctx, "k1", "job-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.ForgetKey(ctx, "nothing", "job-1"); err != nil {
			t.Fatalf("ForgetKey of nothing: %v", err)
		}
		if _, ok := claim(t, s, rec("k1", "h1", "job-3", t0.Add(2*time.Second)), limits); !ok {
			t.Fatal("a forgotten key was not claimed again")
		}
	})
	t.Run("OfConcurrentClaimsOneWins", func(t *testing.T) {
		s := newStorage(t)(t)
		const claimers = 8
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			helds   []string
		)
		errs := make(chan error, claimers)
		for i := range claimers {
			wg.Go(func() {
				job := fmt.Sprintf("job-%d", i)
				held, ok, err := s.ClaimKey(ctx, rec("k", "h", job, t0), limits)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if ok {
					winners = append(winners, job)
				}
				helds = append(helds, held.JobID)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(winners) != 1 {
			t.Fatalf("%d claims of one key won: %v", len(winners), winners)
		}
		for _, h := range helds {
			if h != winners[0] {
				t.Fatalf("a claimer was told the key holds %s, but %s won", h, winners[0])
			}
		}
	})
	t.Run("ClaimWithAnEndedContextFails", func(t *testing.T) {
		s := newStorage(t)(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.ClaimKey(cctx, rec("k", "h", "job", t0), limits); err == nil {
			t.Fatal("ClaimKey with an ended context succeeded")
		}
		if _, ok := claim(t, s, rec("k", "h", "job-2", t0), limits); !ok {
			t.Fatal("a claim with an ended context held the key")
		}
	})
}
