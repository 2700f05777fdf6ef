package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const serviceUnit = "../deploy/ramanserve.service"

// unitSyscalls is the set of system calls the unit's SystemCallFilter=
// lines allow, applied in order (allow lines add, "~" lines remove),
// expanded with `systemd-analyze syscall-filter`.
func unitSyscalls(t *testing.T, analyze string) map[string]bool {
	t.Helper()
	out, err := exec.Command(analyze, "syscall-filter").Output()
	if err != nil {
		t.Fatalf("systemd-analyze syscall-filter: %v", err)
	}
	groups := map[string][]string{}
	group := ""
	for _, line := range strings.Split(string(out), "\n") {
		item := strings.TrimSpace(line)
		switch {
		case item == "" || strings.HasPrefix(item, "#"):
		case strings.HasPrefix(line, "@"):
			group = item
		case group != "":
			groups[group] = append(groups[group], item)
		}
	}
	var expand func(name string, into map[string]bool)
	expand = func(name string, into map[string]bool) {
		if !strings.HasPrefix(name, "@") {
			into[name] = true
			return
		}
		members, ok := groups[name]
		if !ok {
			t.Fatalf("systemd-analyze knows no group %s", name)
		}
		for _, m := range members {
			expand(m, into)
		}
	}
	unit, err := os.ReadFile(serviceUnit)
	if err != nil {
		t.Fatal(err)
	}
	// systemd applies the lines in order once the first has made the
	// filter an allow list: a "~" line removes its calls from the set, a
	// later allow line adds its calls back (systemd.exec(5)).
	allowed := map[string]bool{}
	for _, line := range strings.Split(string(unit), "\n") {
		value, ok := strings.CutPrefix(line, "SystemCallFilter=")
		if !ok {
			continue
		}
		rest, deny := strings.CutPrefix(value, "~")
		if deny && len(allowed) == 0 {
			t.Fatalf("%s: the first SystemCallFilter= line is a deny list; this test expects an allow list first", serviceUnit)
		}
		calls := map[string]bool{}
		for _, name := range strings.Fields(rest) {
			expand(name, calls)
		}
		for name := range calls {
			if deny {
				delete(allowed, name)
			} else {
				allowed[name] = true
			}
		}
	}
	if len(allowed) == 0 {
		t.Fatalf("%s has no SystemCallFilter= allow list", serviceUnit)
	}
	return allowed
}

// tracedServer is ramanserve run under strace -f, its system calls written
// to trace.
type tracedServer struct {
	cmd      *exec.Cmd
	trace    string
	httpAddr string
	zmq      string
	logs     chan string
	exited   chan error
}

// startTraced starts ramanserve under strace and waits until it serves.
// It skips the test when strace cannot trace here (no ptrace).
func startTraced(t *testing.T, strace string, args ...string) *tracedServer {
	t.Helper()
	return startTracedEnv(t, strace, nil, args...)
}

// startTracedEnv is startTraced with env added to the server's
// environment.
func startTracedEnv(t *testing.T, strace string, env []string, args ...string) *tracedServer {
	t.Helper()
	s := &tracedServer{trace: filepath.Join(t.TempDir(), "trace"), logs: make(chan string, 1000), exited: make(chan error, 1)}
	full := append([]string{"-f", "-qq", "-o", s.trace, serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0",
		"-registry", filepath.Join(t.TempDir(), "reg"), "-log-format", "json"}, args...)
	s.cmd = exec.Command(strace, full...)
	if env != nil {
		s.cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		if pid, err := s.pid(); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL) // ramanserve; strace then exits
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	})
	started := make(chan struct{})
	var straceOut []string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, HTTP, ZMQ string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				straceOut = append(straceOut, sc.Text())
				continue
			}
			if line.Msg == "ramanserve started" {
				s.httpAddr, s.zmq = line.HTTP, line.ZMQ
				close(started)
			}
			select {
			case s.logs <- line.Msg:
			default:
			}
		}
	}()
	go func() { s.exited <- s.cmd.Wait() }()
	select {
	case <-started:
	case err := <-s.exited:
		t.Skipf("strace cannot run ramanserve here (%v): %q", err, straceOut)
	case <-time.After(60 * time.Second):
		t.Fatal("ramanserve under strace did not start within 60 s")
	}
	return s
}

// pid is ramanserve's process id (strace's child): the first line of
// the trace, its execve, starts with it.
func (s *tracedServer) pid() (int, error) {
	b, err := os.ReadFile(s.trace)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`^(\d+) `).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no process id at the start of %s", s.trace)
	}
	return strconv.Atoi(string(m[1]))
}

// signal sends sig to ramanserve itself.
func (s *tracedServer) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	pid, err := s.pid()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

func (s *tracedServer) waitLog(t *testing.T, msg string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-s.logs:
			if m == msg {
				return
			}
		case <-deadline:
			t.Fatalf("no %q logged within 30 s", msg)
		}
	}
}

// stop sends SIGTERM and returns the system calls of the trace.
func (s *tracedServer) stop(t *testing.T) []string {
	t.Helper()
	s.signal(t, syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("ramanserve under strace after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ramanserve did not stop within 30 s of SIGTERM")
	}
	b, err := os.ReadFile(s.trace)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\d+ +([a-z0-9_]+)\(`).FindAllSubmatch(b, -1) {
		seen[string(m[1])] = true
	}
	var calls []string
	for c := range seen {
		calls = append(calls, c)
	}
	sort.Strings(calls)
	return calls
}

// TestServiceSyscallFilterCoversTheServer: every system call ramanserve
// makes through a training, a model load, predictions, TLS with client
// certificates, SIGHUP and SIGTERM (traced with strace -f) is allowed by
// deploy/ramanserve.service's SystemCallFilter=, which would otherwise
// fail it with EPERM. Needs strace and systemd-analyze; skipped without.
func TestServiceSyscallFilterCoversTheServer(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	longProcessTest(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	needCurl(t)
	allowed := unitSyscalls(t, analyze)

	// Training, load and predictions: cmd/ramandemo against a plain server.
	demo := filepath.Join(t.TempDir(), "ramandemo")
	if out, err := exec.Command("go", "build", "-o", demo, "ramanserve/cmd/ramandemo").CombinedOutput(); err != nil {
		t.Fatalf("build ramandemo: %v\n%s", err, out)
	}
	// As systemd runs it: notifications and the watchdog's probes too.
	sock := listenNotify(t)
	plain := startTracedEnv(t, strace, []string{"NOTIFY_SOCKET=" + sock.path, "WATCHDOG_USEC=1000000"})
	sock.await(t, "READY=1", time.Minute)
	out, err := exec.Command(demo, "-http", "http://"+plain.httpAddr, "-zmq", plain.zmq, "-samples", "200", "-predictions", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("ramandemo: %v\n%s", err, out)
	}
	sock.await(t, "WATCHDOG=1", time.Minute)
	used := plain.stop(t)

	// TLS with a client certificate, a SIGHUP reload.
	d := newTLSDir(t)
	cert, key := d.clientCert(t, d.ca, "console")
	tlsServer := startTraced(t, strace, "-tls-cert", d.cert, "-tls-key", d.key, "-tls-client-ca", d.caFile)
	url := "https://" + tlsServer.httpAddr + "/health"
	if run := curl(t, "--cacert", d.caFile, "--cert", cert, "--key", key, "-o", "/dev/null", "-w", "%{http_code}", url); run.stdout != "200" {
		t.Fatalf("health over mutual TLS: exit %d, %s", run.exit, run.stderr)
	}
	tlsServer.signal(t, syscall.SIGHUP)
	tlsServer.waitLog(t, "SIGHUP: reloaded")
	used = append(used, tlsServer.stop(t)...)

	var refused []string
	seen := map[string]bool{}
	for _, c := range used {
		if !seen[c] && !allowed[c] {
			refused = append(refused, c)
		}
		seen[c] = true
	}
	t.Logf("%d distinct system calls traced, all checked against %d the unit allows", len(seen), len(allowed))
	if len(refused) > 0 {
		t.Errorf("system calls ramanserve makes that %s refuses: %v", serviceUnit, refused)
	}
}
