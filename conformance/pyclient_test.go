package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/server/zmtp/curve"
)

// The Python client (clients/python) against real server processes,
// through Debian's python3-zmq and python3-msgpack.

// pythonClientDir is the package, used in place as a checkout uses it.
var pythonClientDir, _ = filepath.Abs("../clients/python")

type pyClientError struct {
	Class         string  `json:"class"`
	Code          string  `json:"code"`
	Retryable     bool    `json:"retryable"`
	Message       string  `json:"message"`
	Local         *bool   `json:"local"`
	CorrelationID *string `json:"correlation_id"`
}

// pyClient runs one scenario of testdata/pyclient.py and hands each line
// it writes to lines (closed when the script ends); wait returns its
// exit.
func pyClient(t *testing.T, job map[string]any) (lines <-chan []byte, wait func() error) {
	t.Helper()
	py := debianPython(t, "zmq", "msgpack")
	job["package_dir"] = pythonClientDir
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, py, "testdata/pyclient.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan []byte, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			ch <- append([]byte(nil), sc.Bytes()...)
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(cancel)
	return ch, func() error {
		err := cmd.Wait()
		if err != nil {
			return fmt.Errorf("%v\n%s", err, stderr.String())
		}
		return nil
	}
}

// pyClientResult runs a scenario that writes one JSON object and decodes it.
func pyClientResult(t *testing.T, job map[string]any, into any) {
	t.Helper()
	lines, wait := pyClient(t, job)
	var last []byte
	for l := range lines {
		last = l
	}
	if err := wait(); err != nil {
		t.Fatalf("pyclient.py %s: %v", job["scenario"], err)
	}
	if err := json.Unmarshal(last, into); err != nil {
		t.Fatalf("pyclient.py %s output %q: %v", job["scenario"], last, err)
	}
}

// processWithModel starts a process over a registry holding one model,
// made active, with extra flags.
func processWithModel(t *testing.T, reg, version string, extra ...string) *serverProcess {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(reg, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, filepath.Join(reg, "models", version+".npz"), version)
	p := startProcess(t, reg, extra...)
	loadVersion(t, p.client(t), version)
	return p
}

func TestPythonClientBasics(t *testing.T) {
	t.Parallel()
	const version = "py-client"
	p := processWithModel(t, t.TempDir(), version)
	wn, in := testSpectrum()
	var got struct {
		Pong               map[string]any `json:"pong"`
		InfoVersion        string         `json:"info_version"`
		InfoCount          int            `json:"info_count"`
		InfoAxis           []float64      `json:"info_axis"`
		InfoPlainHasAxis   bool           `json:"info_plain_has_axis"`
		Prediction         map[string]any `json:"prediction"`
		Contributions      map[string]any `json:"contributions"`
		SentForLocalErrors int            `json:"sent_for_local_errors"`
		Short              *pyClientError `json:"short"`
		Shifted            *pyClientError `json:"shifted"`
		NaN                *pyClientError `json:"nan"`
		ServerShifted      *pyClientError `json:"server_shifted"`
		ServerNaN          *pyClientError `json:"server_nan"`
		ServerShort        *pyClientError `json:"server_short"`
		ServerBadOptions   *pyClientError `json:"server_bad_options"`
	}
	pyClientResult(t, map[string]any{"scenario": "basics", "endpoint": p.zmq, "wavenumbers": wn, "intensities": in}, &got)

	if got.Pong["model_version"] != version || got.Pong["protocol_version"] != 1.0 {
		t.Errorf("pong %v", got.Pong)
	}
	if got.InfoVersion != version || got.InfoCount != len(wn) || len(got.InfoAxis) != len(wn) || got.InfoPlainHasAxis {
		t.Errorf("model_info: version %q, count %d, axis of %d, axis unasked %v", got.InfoVersion, got.InfoCount, len(got.InfoAxis), got.InfoPlainHasAxis)
	}
	conc, _ := got.Prediction["concentrations"].(map[string]any)
	if got.Prediction["model_version"] != version || len(conc) != 3 {
		t.Errorf("prediction %v", got.Prediction)
	}
	if got.Contributions["q"] == nil {
		t.Errorf("contributions %v", got.Contributions)
	}
	// Refused before sending: the class, the code and nothing on the wire.
	for name, c := range map[string]struct {
		got   *pyClientError
		class string
	}{
		"short":   {got.Short, "InvalidSpectrum"},
		"shifted": {got.Shifted, "SpectrumOutOfRange"},
		"nan":     {got.NaN, "InvalidSpectrum"},
	} {
		e := c.got
		if e == nil || e.Class != c.class || e.Code != strings.ToUpper(snake(c.class)) || e.Retryable || e.Local == nil || !*e.Local || e.CorrelationID != nil {
			t.Errorf("%s checked locally: %+v, want %s", name, e, c.class)
		}
	}
	if got.SentForLocalErrors != 0 {
		t.Errorf("%d requests sent for spectra the axis check refused", got.SentForLocalErrors)
	}
	// The server's verdicts, typed, with the request's id.
	for name, c := range map[string]struct {
		got  *pyClientError
		code string
	}{
		"shifted":     {got.ServerShifted, "SPECTRUM_OUT_OF_RANGE"},
		"nan":         {got.ServerNaN, "INVALID_SPECTRUM"},
		"short":       {got.ServerShort, "INVALID_SPECTRUM"},
		"bad options": {got.ServerBadOptions, "INVALID_REQUEST"},
	} {
		e := c.got
		if e == nil || e.Code != c.code || e.Class != strings.ReplaceAll(camel(c.code), "_", "") || e.Retryable || e.Local == nil || *e.Local ||
			e.CorrelationID == nil || len(*e.CorrelationID) != 36 {
			t.Errorf("%s from the server: %+v, want %s", name, e, c.code)
		}
	}
}

// snake turns SpectrumOutOfRange into spectrum_out_of_range.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// camel turns SPECTRUM_OUT_OF_RANGE into Spectrum_Out_Of_Range.
func camel(code string) string {
	parts := strings.Split(strings.ToLower(code), "_")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "_")
}

func TestPythonClientWithoutModel(t *testing.T) {
	t.Parallel()
	p := startProcess(t, t.TempDir())
	wn, in := testSpectrum()
	var got struct {
		Pong      map[string]any `json:"pong"`
		ModelInfo *pyClientError `json:"model_info"`
		Predict   *pyClientError `json:"predict"`
	}
	pyClientResult(t, map[string]any{"scenario": "no_model", "endpoint": p.zmq, "wavenumbers": wn, "intensities": in}, &got)
	if got.Pong["model_version"] != "" {
		t.Errorf("pong %v", got.Pong)
	}
	for name, e := range map[string]*pyClientError{"model_info": got.ModelInfo, "predict": got.Predict} {
		if e == nil || e.Class != "ModelNotLoaded" || e.Code != "MODEL_NOT_LOADED" || e.Retryable {
			t.Errorf("%s without a model: %+v", name, e)
		}
	}
}

// TestPythonClientServerDown: against a port nobody listens on, a call
// gives up after its 1 + retries attempts with ChannelDown (retryable),
// in about (1 + retries) x timeout plus the backoffs, never hanging.
func TestPythonClientServerDown(t *testing.T) {
	t.Parallel()
	var got struct {
		Error      *pyClientError `json:"error"`
		ElapsedS   float64        `json:"elapsed_s"`
		Attempts   int            `json:"attempts"`
		Reconnects int            `json:"reconnects"`
	}
	pyClientResult(t, map[string]any{"scenario": "down", "endpoint": "tcp://" + freeLoopbackAddr(t)}, &got)
	if e := got.Error; e == nil || e.Class != "ChannelDown" || e.Code != "CHANNEL_DOWN" || !e.Retryable {
		t.Fatalf("error %+v, want ChannelDown", got.Error)
	}
	// 3 attempts of 0.3 s; backoffs of at most 1.5 x (0.05 + 0.1) s.
	if got.Attempts != 3 || got.Reconnects != 3 || got.ElapsedS < 0.9 || got.ElapsedS > 30 {
		t.Fatalf("gave up after %d attempts, %d new sockets, %.2f s", got.Attempts, got.Reconnects, got.ElapsedS)
	}
	t.Logf("ChannelDown after %d attempts in %.2f s", got.Attempts, got.ElapsedS)
}

// freeLoopbackAddr is a loopback TCP address nobody listens on (at the
// time of the call).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestPythonClientAcrossRestarts: a stream of predicts runs while the
// server is stopped and started again on the same port, once with SIGTERM
// and once with kill -9. Every predict succeeds: a request in flight when
// the server went away times out, and Lazy Pirate sends it again on a new
// socket once the new process serves, within the retry budget (1 s per
// attempt, 8 retries: at least 9 s of attempts plus the backoffs).
func TestPythonClientAcrossRestarts(t *testing.T) {
	longProcessTest(t)
	const version = "py-stream"
	reg := t.TempDir()
	zmqAddr := "tcp://" + freeLoopbackAddr(t)
	p := processWithModel(t, reg, version, "-zmq-addr", zmqAddr)
	wn, in := testSpectrum()
	const count = 600
	lines, wait := pyClient(t, map[string]any{"scenario": "stream", "endpoint": zmqAddr, "wavenumbers": wn, "intensities": in,
		"count": count, "timeout": 1.0, "retries": 8})

	type restart struct {
		how          string
		afterOK      int
		down         time.Duration
		stop         func(p *serverProcess)
		hasRestarted bool
	}
	restarts := []*restart{
		{how: "SIGTERM", afterOK: 100, stop: func(p *serverProcess) {
			if err := p.terminate(t); err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
		}},
		{how: "kill -9", afterOK: 250, stop: func(p *serverProcess) { p.kill() }},
	}
	ok, failed := 0, 0
	var summary struct {
		Done         bool    `json:"done"`
		Attempts     int     `json:"attempts"`
		Reconnects   int     `json:"reconnects"`
		LongestCallS float64 `json:"longest_call_s"`
	}
	deadline := time.After(4 * time.Minute)
	for done := false; !done; {
		select {
		case l, more := <-lines:
			if !more {
				done = true
				break
			}
			var line struct {
				OK           *bool          `json:"ok"`
				ModelVersion string         `json:"model_version"`
				Error        *pyClientError `json:"error"`
				Done         bool           `json:"done"`
			}
			if err := json.Unmarshal(l, &line); err != nil {
				t.Fatalf("stream line %q: %v", l, err)
			}
			switch {
			case line.Done:
				if err := json.Unmarshal(l, &summary); err != nil {
					t.Fatal(err)
				}
			case line.OK != nil && *line.OK && line.ModelVersion == version:
				ok++
			default:
				failed++
				t.Errorf("predict failed: %s", l)
			}
			for _, r := range restarts {
				if !r.hasRestarted && ok >= r.afterOK {
					r.hasRestarted = true
					began := time.Now()
					r.stop(p)
					p = startProcess(t, reg, "-zmq-addr", zmqAddr)
					r.down = time.Since(began)
				}
			}
		case <-deadline:
			t.Fatalf("the stream did not end within 4 minutes (%d ok, %d failed)", ok, failed)
		}
	}
	if err := wait(); err != nil {
		t.Fatalf("pyclient.py stream: %v", err)
	}
	for _, r := range restarts {
		if !r.hasRestarted {
			t.Errorf("the %s restart never happened", r.how)
		}
		t.Logf("%s: the server was down for %v", r.how, r.down.Round(time.Millisecond))
	}
	if !summary.Done || ok != count || failed != 0 {
		t.Fatalf("%d of %d predicts succeeded, %d failed; summary %+v", ok, count, failed, summary)
	}
	t.Logf("%d predicts, 0 lost; %d attempts, %d new sockets after a timeout, longest call %.2f s",
		count, summary.Attempts, summary.Reconnects, summary.LongestCallS)
}

// TestPythonClientInstalls: `pip install --no-build-isolation` builds and
// installs the package with the Python and setuptools Debian ships,
// without a package index, into a virtual environment that sees the
// system's pyzmq and msgpack; the installed package imports from there.
func TestPythonClientInstalls(t *testing.T) {
	longProcessTest(t) // pip's build takes seconds
	t.Parallel()
	py := debianPython(t, "zmq", "msgpack", "setuptools", "pip", "ensurepip")
	tmp := t.TempDir()
	// A copy, so that the build's files (build/, *.egg-info) stay out of
	// the checkout.
	src := filepath.Join(tmp, "src")
	if out, err := exec.Command("cp", "-r", pythonClientDir, src).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	venv := filepath.Join(tmp, "venv")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run(py, "-m", "venv", "--system-site-packages", venv)
	run(filepath.Join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", src)
	where := strings.TrimSpace(run(filepath.Join(venv, "bin", "python"), "-c",
		"import ramanserve_client as rc; print(rc.__file__); rc.Client('tcp://127.0.0.1:1').close()"))
	if !strings.HasPrefix(where, venv) {
		t.Fatalf("imported from %s, not from the virtual environment", where)
	}
}

// TestPythonClientCurve: with CurveZMQ keys the client's handshake ping
// is answered; a client key the server's allowlist lacks gets no answer,
// so its call ends in ChannelDown.
func TestPythonClientCurve(t *testing.T) {
	t.Parallel()
	debianPython(t, "zmq", "msgpack")
	keys := t.TempDir()
	serverPub, _ := keygenPair(t, keys, "server")
	rigPub, rigSec := keygenPair(t, keys, "rig")
	strangerPub, strangerSec := keygenPair(t, keys, "stranger")
	clients := filepath.Join(keys, "clients")
	if err := os.WriteFile(clients, []byte(rigPub.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, t.TempDir(), "-zmq-curve-secret-key", filepath.Join(keys, "server.key"), "-zmq-curve-clients", clients)
	pair := func(pub curve.PublicKey, sec curve.SecretKey) map[string]string {
		s, err := curve.EncodeZ85(sec[:])
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"public": pub.String(), "secret": s}
	}
	var got map[string]struct {
		Pong  map[string]any `json:"pong"`
		Error *pyClientError `json:"error"`
	}
	pyClientResult(t, map[string]any{"scenario": "curve", "endpoint": p.zmq, "server_key": serverPub.String(),
		"admitted": pair(rigPub, rigSec), "stranger": pair(strangerPub, strangerSec)}, &got)
	if a := got["admitted"]; a.Error != nil || a.Pong["protocol_version"] != 1.0 {
		t.Errorf("the listed client: %+v", a)
	}
	if s := got["stranger"]; s.Error == nil || s.Error.Code != "CHANNEL_DOWN" {
		t.Errorf("the unlisted client: %+v, want CHANNEL_DOWN", s)
	}
}
