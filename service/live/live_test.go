package live_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"ramanserve/service/live"
)

func outcome(v string) *live.Outcome { return &live.Outcome{ModelVersion: v} }

// The latest outcome wins per slot, and each overwritten one is counted.
func TestFeedCoalescesAndCounts(t *testing.T) {
	f := live.NewFeed(4)
	f.Offer("A", outcome("1"))
	f.Offer("A", outcome("2"))
	f.Offer("B", outcome("3"))
	got := f.Take(nil)
	if len(got) != 3 {
		t.Fatalf("took %d slots, want 3 (channel, A, B): %+v", len(got), got)
	}
	if got[0].Source != "" || got[0].Outcome.ModelVersion != "3" {
		t.Fatalf("channel slot %+v, want the latest outcome 3", got[0])
	}
	if got[1].Source != "A" || got[1].Outcome.ModelVersion != "2" || got[2].Source != "B" {
		t.Fatalf("source slots %+v, want A=2 then B=3", got[1:])
	}
	st := f.Stats()
	// channel: 1 and 2 overwritten; A: 1 overwritten.
	if st.Offered != 3 || st.Coalesced != 3 {
		t.Fatalf("stats %+v, want 3 offered and 3 coalesced", st)
	}
	if again := f.Take(nil); len(again) != 0 {
		t.Fatalf("a second Take returned %+v, want nothing new", again)
	}
}

// Sources beyond the bound are dropped and counted; the channel slot
// still takes their outcomes.
func TestFeedBoundsSources(t *testing.T) {
	f := live.NewFeed(2)
	for i := range 5 {
		f.Offer(fmt.Sprintf("port-%d", i), outcome("v"))
	}
	got := f.Take(nil)
	if len(got) != 3 {
		t.Fatalf("took %d slots, want the channel and 2 sources", len(got))
	}
	if st := f.Stats(); st.SourcesDropped != 3 {
		t.Fatalf("dropped %d, want 3", st.SourcesDropped)
	}
}

// Offer never waits for the publisher, and the ready token is one.
func TestFeedOfferDoesNotBlock(t *testing.T) {
	f := live.NewFeed(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				f.Offer(fmt.Sprint(g), outcome(fmt.Sprint(i)))
			}
		}()
	}
	wg.Wait()
	if st := f.Stats(); st.Offered != 4000 {
		t.Fatalf("offered %d, want 4000", st.Offered)
	}
	<-f.Ready()
	select {
	case <-f.Ready():
		t.Fatal("more than one ready token")
	default:
	}
}

// A warmed-up Offer of a known source allocates nothing.
func TestFeedOfferAllocatesNothing(t *testing.T) {
	f := live.NewFeed(0)
	o := outcome("v")
	f.Offer("port", o)
	if n := testing.AllocsPerRun(100, func() { f.Offer("port", o) }); n != 0 {
		t.Fatalf("Offer allocated %v times", n)
	}
}

func TestSourceTime(t *testing.T) {
	recv := time.Unix(1_800_000_000, 0)
	cases := []struct {
		ts    float64
		hasTS bool
		want  time.Time
	}{
		{0, false, recv},
		{1_800_000_000 - 1.5, true, time.Unix(1_800_000_000-2, 500_000_000)},
		{1_800_000_000 - 3600, true, recv}, // too far from the receipt
		{math.NaN(), true, recv},
		{math.Inf(1), true, recv},
		{-5, true, recv},
	}
	for _, c := range cases {
		if got := live.SourceTime(recv, c.ts, c.hasTS); !got.Equal(c.want) {
			t.Errorf("SourceTime(%v, %v) = %v, want %v", c.ts, c.hasTS, got, c.want)
		}
	}
}

func TestSourceName(t *testing.T) {
	if got := live.SourceName("P1", true, 3, true); got != "P1" {
		t.Errorf("port wins: got %q", got)
	}
	if got := live.SourceName("", false, 3, true); got != "channel-3" {
		t.Errorf("channel: got %q", got)
	}
	if got := live.SourceName("", false, math.NaN(), true); got != "" {
		t.Errorf("NaN channel: got %q", got)
	}
}
