package app

import (
	"context"
	"crypto/rsa"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/server/auth"
	opcuasrv "ramanserve/server/opcua"
	"ramanserve/server/opcua/opcuatest"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// testWriter writes a server's log lines into the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// opcuaWait is the deadline of every wait on the OPC UA side: generous,
// the machine is busy and tests run under the race detector.
const opcuaWait = 20 * time.Second

type opcuaFixture struct {
	app                  *App
	clientDER            []byte
	clientKey            *rsa.PrivateKey
	trusted, tokens, dir string
}

// writePair writes a certificate and key made by GenerateCertificate.
func writePair(t *testing.T, dir, name, uri string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := opcuasrv.GenerateCertificate(uri, []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// startOPCUAServer starts a server with the OPC UA server on (None
// allowed), a trusted client certificate, and tokens when withTokens.
func startOPCUAServer(t *testing.T, withTokens bool) *opcuaFixture {
	t.Helper()
	dir := t.TempDir()
	f := &opcuaFixture{dir: dir, trusted: filepath.Join(dir, "pki", "trusted")}
	if err := os.MkdirAll(f.trusted, 0o700); err != nil {
		t.Fatal(err)
	}
	serverCert, serverKey := writePair(t, dir, "server", "urn:ramanserve:test")
	clientCert, clientKey := writePair(t, f.trusted, "client", "urn:ramanserve:test-client")
	der, key, err := opcuasrv.LoadKeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(clientKey, filepath.Join(dir, "client.key")) // keys do not belong among the trusted certificates
	f.clientDER, f.clientKey = der, key
	cfg := Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: filepath.Join(dir, "registry"),
		// The OPC UA side's warnings (refusals, cuts) show in a failing test's output.
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		OPCUA: OPCUAConfig{Addr: "opc.tcp://127.0.0.1:0", AllowInsecure: true, CertFile: serverCert, KeyFile: serverKey,
			// The synthetic model is sure of in-domain spectra to about 0.37:
			// a lower threshold keeps them Good, so that Uncertain comes from
			// the out-of-domain spectra only.
			TrustedDir: f.trusted, UncertainBelow: 0.1}}
	if withTokens {
		f.tokens = filepath.Join(dir, "tokens")
		if err := os.WriteFile(f.tokens, []byte(auth.FileLine(auth.Read, "historian-secret", "historian")), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Auth.TokensFile = f.tokens
	}
	a, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	f.app = a
	return f
}

// dial connects a gopcua client; user "" is anonymous.
func (f *opcuaFixture) dial(t *testing.T, policy string, mode ua.MessageSecurityMode, user, password string) (*opcua.Client, error) {
	t.Helper()
	c, err := opcuatest.Dial(context.Background(), f.app.OPCUA().URL(), opcuatest.Client{
		Policy: policy, Mode: mode, Key: f.clientKey, DER: f.clientDER, User: user, Password: password, Timeout: opcuaWait})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, nil
}

// loadTrained trains a model on synthetic spectra (seed), stages and
// loads it, and returns its version.
func loadTrained(t *testing.T, a *App, seed uint64) string {
	t.Helper()
	ctx := context.Background()
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: seed}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	version, _, err := a.Registry.AddStaged(ctx, registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS", Operator: "op",
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, res.Params) },
	})
	if err != nil {
		t.Fatal(err)
	}
	load(t, a, version)
	return version
}

func load(t *testing.T, a *App, version string) {
	t.Helper()
	if _, err := a.Registry.Load(context.Background(), registry.LoadRequest{Version: version}); err != nil {
		t.Fatalf("load %s: %v", version, err)
	}
}

// monitor subscribes at 100 ms to the paths' values; the returned
// function waits for the next data change and returns its values by
// path (the later of two in one publish wins).
func monitor(t *testing.T, c *opcua.Client, nsNodeID func(string) *ua.NodeID, paths ...string) func() map[string]*ua.DataValue {
	t.Helper()
	ctx := context.Background()
	notes := make(chan *opcua.PublishNotificationData, 1024)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, notes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Cancel(context.Background()) })
	var items []*ua.MonitoredItemCreateRequest
	for i, p := range paths {
		items = append(items, opcua.NewMonitoredItemCreateRequestWithDefaults(nsNodeID(p), ua.AttributeIDValue, uint32(i+1)))
	}
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, items...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if r.StatusCode != ua.StatusOK {
			t.Fatalf("monitoring: %s", r.StatusCode)
		}
	}
	return func() map[string]*ua.DataValue {
		t.Helper()
		dc, err := opcuatest.NextDataChange(notes, opcuaWait)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*ua.DataValue{}
		for _, it := range dc.MonitoredItems {
			out[paths[it.ClientHandle-1]] = it.Value
		}
		return out
	}
}

// nsOf returns the node id maker of the server's namespace, read from the
// server's namespace array as a client would.
func nsOf(t *testing.T, c *opcua.Client) func(string) *ua.NodeID {
	t.Helper()
	ns, err := c.FindNamespace(context.Background(), opcuasrv.NamespaceURI)
	if err != nil {
		t.Fatal(err)
	}
	return func(p string) *ua.NodeID { return ua.NewStringNodeID(ns, p) }
}

// The Must-show of the gopcua client: 100 predicts on ZeroMQ, 100 data
// changes in order, each with the spectrum's time and the right status:
// Good, Uncertain for an out-of-domain spectrum, Bad (value kept) for an
// invalid one; over None and over Basic256Sha256 SignAndEncrypt.
func TestOPCUAPublishesEveryPredict(t *testing.T) {
	f := startOPCUAServer(t, false)
	a := f.app
	loadTrained(t, a, 4)
	ctx := context.Background()
	pc, err := client.DialPrediction(ctx, a.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	normal := synth.New(synth.Config{Seed: 5}).Next().Intensities
	odd := append([]float64(nil), normal...)
	for j := 900; j < 940; j++ {
		odd[j] *= 3
	}
	// A spectrum of the wrong length decodes and is refused by the model
	// (INVALID_SPECTRUM), so its port is known.
	invalid := append([]float64(nil), normal[:len(normal)-1]...)
	for _, sec := range []struct {
		policy string
		mode   ua.MessageSecurityMode
	}{{"None", ua.MessageSecurityModeNone}, {"Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt}} {
		t.Run(sec.policy, func(t *testing.T) {
			if testing.Short() && sec.policy == "None" {
				// 100 publishes of about 100 ms each: the inner loop
				// (make test-quick) runs the secure policy only, whose
				// path includes this one's; make test runs both.
				t.Skip("-short: Basic256Sha256 covers it")
			}
			c, err := f.dial(t, sec.policy, sec.mode, "", "")
			if err != nil {
				t.Fatal(err)
			}
			next := monitor(t, c, nsOf(t, c), "ramanserve/Analytes/EPA/Value", "ramanserve/Ports/P1/EPA/Value")
			next() // the values at the time of monitoring
			var lastGood float64
			for i := range 100 {
				spec, want := normal, ua.StatusOK
				switch i % 10 {
				case 3:
					spec, want = odd, ua.StatusUncertainSensorNotAccurate
				case 7:
					spec, want = invalid, ua.StatusBadSensorFailure
				}
				before := time.Now()
				axis := synth.Axis()[:len(spec)]
				reply, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: axis, Intensities: spec, ScanSeq: int64(i)}, &client.ScanContext{Port: "P1"})
				after := time.Now()
				if want == ua.StatusBadSensorFailure {
					if err == nil {
						t.Fatalf("predict %d of an invalid spectrum succeeded", i)
					}
				} else if err != nil {
					t.Fatalf("predict %d: %v", i, err)
				}
				got := next()
				for _, path := range []string{"ramanserve/Analytes/EPA/Value", "ramanserve/Ports/P1/EPA/Value"} {
					dv := got[path]
					if dv == nil {
						// The channel and the port are two items: they may
						// come in two publishes.
						more := next()
						dv = more[path]
						for k, v := range more {
							got[k] = v
						}
					}
					if dv == nil {
						t.Fatalf("predict %d: no data change of %s", i, path)
					}
					if dv.Status != want {
						t.Fatalf("predict %d: %s status %s, want %s", i, path, dv.Status, want)
					}
					if dv.SourceTimestamp.Before(before.Add(-time.Millisecond)) || dv.SourceTimestamp.After(after.Add(time.Millisecond)) {
						t.Fatalf("predict %d: source time %v not within the request's %v..%v", i, dv.SourceTimestamp, before, after)
					}
					v, _ := dv.Value.Value().(float64)
					if want == ua.StatusBadSensorFailure {
						if v != lastGood {
							t.Fatalf("predict %d: a failure's value %v, want the last good %v", i, v, lastGood)
						}
					} else if epa, _ := reply.Concentrations.Get("EPA"); v != epa {
						t.Fatalf("predict %d: value %v, reply %v", i, v, epa)
					}
				}
				if want != ua.StatusBadSensorFailure {
					lastGood, _ = reply.Concentrations.Get("EPA")
				}
			}
		})
	}
}

// Hot swaps under subscription: over 20 swaps between two models, the
// new ModelVersion arrives in the same publish as the first value of the
// new model, or before it.
func TestOPCUAModelVersionLeadsItsValues(t *testing.T) {
	f := startOPCUAServer(t, false)
	a := f.app
	versions := []string{loadTrained(t, a, 4), loadTrained(t, a, 6)}
	ctx := context.Background()
	pc, err := client.DialPrediction(ctx, a.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	const version, value = "ramanserve/Analytes/EPA/ModelVersion", "ramanserve/Analytes/EPA/Value"
	next := monitor(t, c, nsOf(t, c), version, value)
	seen := ""
	for got := next(); got[version] == nil || got[value] == nil; got = next() {
		// the values at the time of monitoring, in one publish or two
		if got[version] != nil {
			break
		}
	}
	spectrum := synth.New(synth.Config{Seed: 5}).Next().Intensities
	for swap := range 20 {
		want := versions[swap%2]
		if _, err := a.Registry.Load(ctx, registry.LoadRequest{Version: want, Source: registry.SourceArchived}); err != nil {
			t.Fatalf("swap %d to %s: %v", swap, want, err)
		}
		reply, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: spectrum, ScanSeq: int64(swap)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.ModelVersion != want {
			t.Fatalf("swap %d: the reply names %s, want %s", swap, reply.ModelVersion, want)
		}
		epa, _ := reply.Concentrations.Get("EPA")
		for {
			got := next()
			// A publish is one unit: its version counts as seen with its value.
			if dv := got[version]; dv != nil {
				seen, _ = dv.Value.Value().(string)
			}
			dv := got[value]
			if dv == nil {
				continue
			}
			if v, _ := dv.Value.Value().(float64); v != epa {
				continue // an earlier value
			}
			if seen != want {
				t.Fatalf("swap %d: the first value of %s came with ModelVersion %q", swap, want, seen)
			}
			break
		}
	}
}
