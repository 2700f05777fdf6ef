package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsWork: spinning shows in Process, 50 ms of CPU within
// ten seconds of wall time however busy the machine, and Process never
// goes backwards.
func TestProcessCountsWork(t *testing.T) {
	before, x := Process(), 0
	for deadline := time.Now().Add(10 * time.Second); Process()-before < 50*time.Millisecond && time.Now().Before(deadline); {
		for i := range 100000 {
			x += i
		}
	}
	if after := Process(); after < before+50*time.Millisecond {
		t.Fatalf("CPU time went from %v to %v over 10 s of spinning (%d)", before, after, x)
	}
}
