package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/trainer/synth"
)

// node-opcua (pinned in testdata/opcua/package-lock.json) is an OPC UA
// client written by others: TestOPCUANodeInterop has it connect, browse
// the ramanserve folder, read the values with their units, try a write
// and subscribe at 100 ms, while the test sends predicts on ZeroMQ and
// checks each data change node-opcua reports. make test-opcua installs
// it (npm ci) and sets RAMANSERVE_TEST_OPCUA=1.

type nodeChange struct {
	Value  float64 `json:"value"`
	Status string  `json:"status"`
	Code   uint32  `json:"code"`
	Source string  `json:"source"`
	Server string  `json:"server"`
}

type nodeLine struct {
	Ready *struct {
		Nodes  []string `json:"nodes"`
		Values map[string]struct {
			Status string `json:"status"`
			Units  string `json:"units"`
		} `json:"values"`
		Write   string `json:"write"`
		Channel string `json:"channel"`
		Mode    string `json:"mode"`
	} `json:"ready"`
	Change  *nodeChange `json:"change"`
	Refused string      `json:"refused"`
	Error   string      `json:"error"`
	Done    bool        `json:"done"`
}

type nodeClient struct {
	t     *testing.T
	stdin io.WriteCloser
	lines chan nodeLine
	cmd   *exec.Cmd
}

func startNodeClient(t *testing.T, f *opcuaFixture, policy, mode, user, password string) *nodeClient {
	t.Helper()
	dir := filepath.Join("testdata", "opcua")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-client")); err != nil {
		t.Fatalf("node-opcua is not installed (make test-opcua runs npm ci in %s): %v", dir, err)
	}
	args, _ := json.Marshal(map[string]string{
		"url": f.app.OPCUA().URL(), "policy": policy, "mode": mode, "user": user, "password": password,
		"pki": filepath.Join(t.TempDir(), "pki"), "cert": filepath.Join(f.trusted, "client.pem"), "key": filepath.Join(f.dir, "client.key"),
		"applicationUri": "urn:ramanserve:test-client",
	})
	cmd := exec.Command("node", filepath.Join(dir, "interop.js"), string(args))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	nc := &nodeClient{t: t, stdin: stdin, lines: make(chan nodeLine, 256), cmd: cmd}
	go func() {
		defer close(nc.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l nodeLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				nc.lines <- l
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(opcuaWait):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node-opcua's stderr:\n%s", stderr.String())
		}
	})
	return nc
}

func (nc *nodeClient) next() nodeLine {
	nc.t.Helper()
	select {
	case l, ok := <-nc.lines:
		if !ok {
			nc.t.Fatal("node-opcua ended")
		}
		if l.Error != "" {
			nc.t.Fatalf("node-opcua: %s", l.Error)
		}
		return l
	case <-time.After(opcuaWait):
		nc.t.Fatal("node-opcua said nothing within the deadline")
	}
	return nodeLine{}
}

func TestOPCUANodeInterop(t *testing.T) {
	if os.Getenv("RAMANSERVE_TEST_OPCUA") == "" {
		t.Skip("set RAMANSERVE_TEST_OPCUA=1 after npm ci in testdata/opcua (make test-opcua)")
	}
	open := startOPCUAServer(t, false)
	loadTrained(t, open.app, 4)
	withUsers := startOPCUAServer(t, true)
	loadTrained(t, withUsers.app, 4)
	for _, run := range []struct {
		name, policy, mode, user, password string
		f                                  *opcuaFixture
		predicts                           int
	}{
		{"None", "None", "None", "", "", open, 100},
		{"Basic256Sha256-SignAndEncrypt", "Basic256Sha256", "SignAndEncrypt", "", "", open, 100},
		{"Aes128_Sha256_RsaOaep-Sign-user", "Aes128_Sha256_RsaOaep", "Sign", "historian", "historian-secret", withUsers, 10},
	} {
		t.Run(run.name, func(t *testing.T) {
			nc := startNodeClient(t, run.f, run.policy, run.mode, run.user, run.password)
			ready := nc.next()
			if ready.Ready == nil {
				t.Fatalf("node-opcua did not get ready: %+v", ready)
			}
			r := ready.Ready
			if len(r.Nodes) < 25 { // 4 folders, 3 analytes of 3 variables and a unit each, 3 diagnostics, 3 of the server
				t.Errorf("browsing found %d nodes under ramanserve: %v", len(r.Nodes), r.Nodes)
			}
			for _, a := range []string{"EPA", "DHA", "DPA"} {
				if r.Values[a].Units != "g/L" {
					t.Errorf("%s units %q, want g/L", a, r.Values[a].Units)
				}
			}
			if r.Write != "BadNotWritable" {
				t.Errorf("a write was answered %s, want BadNotWritable", r.Write)
			}
			t.Logf("node-opcua: channel %s %s, %d nodes browsed", r.Channel, r.Mode, len(r.Nodes))
			sendPredictsWatched(t, run.f, run.predicts, func() nodeChange { return *nc.next().Change })
			io.WriteString(nc.stdin, "quit\n")
			if l := nc.next(); !l.Done {
				t.Fatalf("node-opcua did not end cleanly: %+v", l)
			}
		})
	}
	t.Run("untrusted certificate", func(t *testing.T) {
		stranger := *withUsers
		stranger.trusted = t.TempDir() // the pair is written here, not into the server's trusted folder
		stranger.dir = stranger.trusted
		writePair(t, stranger.trusted, "client", "urn:ramanserve:test-client")
		nc := startNodeClient(t, &stranger, "Basic256Sha256", "SignAndEncrypt", "historian", "historian-secret")
		if l := nc.next(); l.Refused == "" {
			t.Fatalf("an untrusted certificate: %+v, want a refusal", l)
		} else {
			t.Logf("node-opcua, untrusted certificate: %s", l.Refused)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		nc := startNodeClient(t, withUsers, "Basic256Sha256", "SignAndEncrypt", "historian", "not-the-token")
		if l := nc.next(); !strings.Contains(l.Refused, "BadUserAccessDenied") {
			t.Fatalf("a wrong password: %+v, want a refusal with BadUserAccessDenied", l)
		}
	})
}

// sendPredictsWatched sends n predicts on ZeroMQ (every tenth an out-of-domain
// spectrum, every tenth another an invalid one) and checks each data
// change next returns: in order, the spectrum's time, the status.
func sendPredictsWatched(t *testing.T, f *opcuaFixture, n int, next func() nodeChange) {
	t.Helper()
	ctx := context.Background()
	pc, err := client.DialPrediction(ctx, f.app.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	normal := synth.New(synth.Config{Seed: 5}).Next().Intensities
	odd := append([]float64(nil), normal...)
	for j := 900; j < 940; j++ {
		odd[j] *= 3
	}
	invalid := normal[:len(normal)-1]
	var lastGood float64
	for i := range n {
		spec, want := normal, "Good"
		switch i % 10 {
		case 3:
			spec, want = odd, "UncertainSensorNotAccurate"
		case 7:
			spec, want = invalid, "BadSensorFailure"
		}
		before := time.Now()
		reply, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis()[:len(spec)], Intensities: spec, ScanSeq: int64(i)}, nil)
		after := time.Now()
		if (err != nil) != (want == "BadSensorFailure") {
			t.Fatalf("predict %d: %v", i, err)
		}
		c := next()
		if c.Status != want {
			t.Fatalf("predict %d: status %s, want %s", i, c.Status, want)
		}
		src, perr := time.Parse(time.RFC3339Nano, c.Source)
		if perr != nil || src.Before(before.Add(-time.Millisecond)) || src.After(after.Add(time.Millisecond)) {
			t.Fatalf("predict %d: source time %q not within the request's %v..%v", i, c.Source, before, after)
		}
		want64 := lastGood
		if err == nil {
			want64, _ = reply.Concentrations.Get("EPA")
			lastGood = want64
		}
		if c.Value != want64 {
			t.Fatalf("predict %d: value %v, want %v", i, c.Value, want64)
		}
	}
}
