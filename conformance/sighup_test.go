package conformance

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"
)

// waitLogMsg waits until the process has logged msg at least n times and
// returns those lines; it fails the test after 10 s.
func (p *serverProcess) waitLogMsg(t *testing.T, msg string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var found []map[string]any
		for _, line := range p.logLines() {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
				found = append(found, rec)
			}
		}
		if len(found) >= n {
			return found
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("ramanserve exited (%v) before logging %q %d times; log:\n%v", err, msg, n, p.logLines())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ramanserve did not log %q %d times within 10 s; log:\n%v", msg, n, p.logLines())
		}
	}
}

// TestSIGHUPReloadsAndKeepsServing: each SIGHUP to a real process is
// answered by a reload that is logged, and the process keeps serving
// (SIGHUP's default action would end it).
func TestSIGHUPReloadsAndKeepsServing(t *testing.T) {
	p := startProcess(t, t.TempDir())
	for i := 1; i <= 3; i++ {
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		p.waitLogMsg(t, "SIGHUP: reloaded", i)
		res := must(p.client(t).GetHealthWithResponse(context.Background()))(t)
		if res.StatusCode() != 200 {
			t.Fatalf("health after SIGHUP %d: %d", i, res.StatusCode())
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
}
