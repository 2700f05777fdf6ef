package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/gen"
)

// serverProcess is a real ramanserve process, for tests that kill it.
type serverProcess struct {
	cmd      *exec.Cmd
	httpAddr string
	zmq      string
	exited   chan error

	logMu sync.Mutex
	logs  []string // the last maxKeptLogLines lines of its log (JSON)
}

// maxKeptLogLines bounds what a test process's log keeps for logLines.
const maxKeptLogLines = 2000

func (p *serverProcess) keepLog(line string) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if len(p.logs) == maxKeptLogLines {
		p.logs = append(p.logs[:0], p.logs[1:]...)
	}
	p.logs = append(p.logs, line)
}

// logLines returns the process's recent log lines, oldest first.
func (p *serverProcess) logLines() []string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return append([]string(nil), p.logs...)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBinary builds cmd/ramanserve once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ramanserve-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ramanserve")
		out, err := exec.Command("go", "build", "-o", binPath, "ramanserve/cmd/ramanserve").CombinedOutput()
		if err != nil {
			buildErr = &buildFailure{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("build ramanserve: %v", buildErr)
	}
	return binPath
}

// removeServerBinary removes what serverBinary built, once the suite is
// done: a binary of about 50 MB a run would otherwise pile up in the
// temporary directory.
func removeServerBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}

type buildFailure struct {
	out string
	err error
}

func (b *buildFailure) Error() string { return b.err.Error() + "\n" + b.out }

// startProcess runs ramanserve on free loopback ports over registry dir and
// waits until it logs its bound addresses.
func startProcess(t *testing.T, dir string, extra ...string) *serverProcess {
	t.Helper()
	return startProcessEnv(t, dir, nil, extra...)
}

// startProcessEnv is startProcess with env added to the process's
// environment.
func startProcessEnv(t *testing.T, dir string, env []string, extra ...string) *serverProcess {
	t.Helper()
	args := append([]string{"-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0",
		"-registry", dir, "-log-format", "json"}, extra...)
	cmd := exec.Command(serverBinary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, exited: make(chan error, 1)}
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			p.keepLog(sc.Text())
			var line struct {
				Msg  string `json:"msg"`
				HTTP string `json:"http"`
				ZMQ  string `json:"zmq"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "ramanserve started" {
				p.httpAddr, p.zmq = line.HTTP, line.ZMQ
				once.Do(func() { close(started) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { p.exited <- cmd.Wait() }()
	select {
	case <-started:
	case err := <-p.exited:
		t.Fatalf("ramanserve exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("ramanserve did not start within 30s")
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.logTail(t, 60)
		}
	})
	return p
}

// logTail writes the last n lines of the process's log into the test's
// output: what the server said is what explains a failure seen once.
func (p *serverProcess) logTail(t *testing.T, n int) {
	lines := p.logLines()
	lines = lines[max(len(lines)-n, 0):]
	t.Logf("the last %d lines of the server's log:\n%s", len(lines), strings.Join(lines, "\n"))
}

func (p *serverProcess) client(t *testing.T) *gen.ClientWithResponses {
	t.Helper()
	c, err := gen.NewClientWithResponses("http://"+p.httpAddr, gen.WithHTTPClient(validatingDoer{client: httpClient()}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (p *serverProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

// terminate sends SIGTERM and returns the exit error (nil for exit 0).
func (p *serverProcess) terminate(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("ramanserve did not stop within 30s of SIGTERM")
	}
	return nil
}

func TestGracefulShutdownExitsZero(t *testing.T) {
	p := startProcess(t, t.TempDir())
	res := must(p.client(t).GetHealthWithResponse(context.Background()))(t)
	if res.StatusCode() != 200 {
		t.Fatalf("health %d", res.StatusCode())
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
}
