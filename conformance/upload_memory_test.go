package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// TestUploadMemory200MB streams a ~200 MB training CSV into a real server
// process and compares the growth of its resident memory with the size of
// the numeric matrix the upload holds. It is a measurement, run by `make
// bench` (RAMAN_BENCH_UPLOAD=1), not part of `make test`.
func TestUploadMemory200MB(t *testing.T) {
	if os.Getenv("RAMAN_BENCH_UPLOAD") != "1" {
		t.Skip("set RAMAN_BENCH_UPLOAD=1 (make bench) to run the 200 MB upload measurement")
	}
	const rows = 11000 // about 18.5 KB of text per row: just over 200 MB
	p := startProcess(t, t.TempDir(), "-max-upload-bytes", strconv.Itoa(1<<30))
	pid := p.cmd.Process.Pid
	base := rss(t, pid, "VmRSS")

	var sent atomic.Int64
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := rss(t, pid, "VmRSS"); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(countingWriter{pw, &sent}, 1<<16)
		err := synth.New(synth.Config{Seed: 77}).WriteCSV(context.Background(), bw, rows)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	start := time.Now()
	resp, body := multipartUpload(t, "http://"+p.httpAddr, pr, []byte(goodMeta))
	elapsed := time.Since(start)
	close(stop)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	hwm := rss(t, pid, "VmHWM")
	if pk := peak.Load(); pk > hwm {
		hwm = pk
	}
	matrix := int64(rows) * int64(trainer.NumWavenumbers+3) * 8
	growth := hwm - base
	fmt.Printf("upload: %.0f MB CSV in %v (%.0f MB/s); numeric matrix %.0f MB; server RSS %.0f MB -> peak %.0f MB, growth %.0f MB = %.2fx the matrix (target <= 2x)\n",
		float64(sent.Load())/1e6, elapsed.Round(time.Millisecond), float64(sent.Load())/1e6/elapsed.Seconds(),
		float64(matrix)/1e6, float64(base)/1e6, float64(hwm)/1e6, float64(growth)/1e6, float64(growth)/float64(matrix))
	if sent.Load() < 200e6 {
		t.Errorf("only %d bytes sent; the measurement needs about 200 MB", sent.Load())
	}
	if growth > 2*matrix {
		t.Errorf("memory grew by %.2fx the numeric matrix, want <= 2x", float64(growth)/float64(matrix))
	}
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// rss reads a memory figure (VmRSS, VmHWM) of a process, in bytes.
func rss(t *testing.T, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
