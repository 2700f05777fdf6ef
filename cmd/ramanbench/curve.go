package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"ramanserve/client"
	"ramanserve/server"
	"ramanserve/server/zmtp/curve"
	"ramanserve/trainer"
)

// curveBench is the setting of the CURVE overhead measurement (-curve).
type curveBench struct {
	dir, python, serverBin string
	duration               time.Duration
	model                  *trainer.Result
	spectra                []client.Spectrum
}

// curveBlock is how many requests go to one server before the client
// turns to the other: both see the same machine load, drift included.
const curveBlock = 200

// curveOverhead measures what CurveZMQ adds to a 2048-point predict round
// trip: two ramanserve servers with the same model, one NULL and one with
// -zmq-curve-secret-key, and one REQ client of each kind (the Go client;
// pyzmq, i.e. libzmq with libsodium) alternating blocks of requests
// between them. It prints p50 and p95 of each and the differences.
func curveOverhead(ctx context.Context, b curveBench) error {
	serverPub, serverSec, err := curve.GenerateKeyPair(rand.Reader)
	if err != nil {
		return err
	}
	secZ85, err := curve.EncodeZ85(serverSec[:])
	if err != nil {
		return err
	}
	keyFile := filepath.Join(b.dir, "curve.key")
	if err := os.WriteFile(keyFile, []byte(secZ85+"\n"), 0o600); err != nil {
		return err
	}
	curveOpts := &client.CurveOptions{ServerKey: serverPub}
	nullEP, stopNull, err := b.startServer(ctx, "null", nil, nil)
	if err != nil {
		return err
	}
	defer stopNull()
	curveEP, stopCurve, err := b.startServer(ctx, "curve", curveOpts, []string{"-zmq-curve-secret-key", keyFile})
	if err != nil {
		return err
	}
	defer stopCurve()
	where := "in this process"
	if b.serverBin != "" {
		where = "each its own process (" + b.serverBin + ")"
	}
	fmt.Printf("CurveZMQ overhead: a NULL and a CURVE ramanserve, %s, same model; one REQ client of each kind\n", where)
	fmt.Printf("alternating blocks of %d 2048-point predicts between them for %v; GOMAXPROCS %d\n\n", curveBlock, b.duration, runtime.GOMAXPROCS(0))

	goNull, goCurve, err := b.measureGo(ctx, nullEP, curveEP, curveOpts)
	if err != nil {
		return fmt.Errorf("Go client: %w", err)
	}
	pyNull, pyCurve, err := b.measurePython(nullEP, curveEP, serverPub)
	if err != nil {
		return fmt.Errorf("pyzmq client: %w (make deps installs python3-zmq)", err)
	}
	fmt.Printf("%-16s %-9s %9s %9s %9s\n", "client", "mechanism", "requests", "p50", "p95")
	for _, r := range []struct {
		client, mech string
		lat          []time.Duration
	}{{"Go client", "NULL", goNull}, {"Go client", "CURVE", goCurve}, {"pyzmq (libzmq)", "NULL", pyNull}, {"pyzmq (libzmq)", "CURVE", pyCurve}} {
		fmt.Printf("%-16s %-9s %9d %9s %9s\n", r.client, r.mech, len(r.lat), us(pct(r.lat, 0.50)), us(pct(r.lat, 0.95)))
	}
	fmt.Println()
	for _, r := range []struct {
		client      string
		null, curve []time.Duration
	}{{"Go client", goNull, goCurve}, {"pyzmq (libzmq)", pyNull, pyCurve}} {
		fmt.Printf("CURVE overhead, %s: p50 %+.1fus, p95 %+.1fus (goal: p50 <= 30us)\n", r.client,
			diffUS(r.curve, r.null, 0.50), diffUS(r.curve, r.null, 0.95))
	}
	return nil
}

// startServer starts one ramanserve with the benchmark model on its own
// registry: in this process, or as a process of serverBin with the extra
// flags.
func (b curveBench) startServer(ctx context.Context, name string, curveOpts *client.CurveOptions, extra []string) (string, func(), error) {
	regDir := filepath.Join(b.dir, "registry-"+name)
	var channel server.ChannelConfig
	if b.serverBin == "" && curveOpts != nil {
		channel.Curve.SecretKeyFile = extra[1]
	}
	app, version, err := startWithModel(ctx, regDir, b.model, channel)
	if err != nil {
		return "", nil, fmt.Errorf("%s server: %w", name, err)
	}
	if b.serverBin == "" {
		return app.ZMQEndpoint(), func() { app.Shutdown(context.Background()) }, nil
	}
	// The registry now names the model active; the process restores it.
	if err := app.Shutdown(ctx); err != nil {
		return "", nil, err
	}
	ep, stop, err := startServerProcess(ctx, b.serverBin, regDir, version, curveOpts, extra...)
	if err != nil {
		return "", nil, fmt.Errorf("%s server process: %w", name, err)
	}
	return ep, stop, nil
}

// measureGo: the Go client, a NULL and a CURVE PredictionClient.
func (b curveBench) measureGo(ctx context.Context, nullEP, curveEP string, curveOpts *client.CurveOptions) (null, curved []time.Duration, err error) {
	opts := client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1}
	cn, err := client.DialPrediction(ctx, nullEP, opts)
	if err != nil {
		return nil, nil, err
	}
	defer cn.Close()
	opts.Curve = curveOpts
	cc, err := client.DialPrediction(ctx, curveEP, opts)
	if err != nil {
		return nil, nil, err
	}
	defer cc.Close()
	k := 0
	run := func(c *client.PredictionClient, n int, out *[]time.Duration) error {
		for range n {
			s := &b.spectra[k%len(b.spectra)]
			k++
			t0 := time.Now()
			if _, err := c.Predict(ctx, s, nil); err != nil {
				return err
			}
			if out != nil {
				*out = append(*out, time.Since(t0))
			}
		}
		return nil
	}
	for _, c := range []*client.PredictionClient{cn, cc} { // warm-up
		if err := run(c, 50, nil); err != nil {
			return nil, nil, err
		}
	}
	for end := time.Now().Add(b.duration); time.Now().Before(end); {
		if err := run(cn, curveBlock, &null); err != nil {
			return nil, nil, fmt.Errorf("NULL: %w", err)
		}
		if err := run(cc, curveBlock, &curved); err != nil {
			return nil, nil, fmt.Errorf("CURVE: %w", err)
		}
	}
	slices.Sort(null)
	slices.Sort(curved)
	return null, curved, nil
}

// measurePython runs curve_client.py: pyzmq REQ sockets, one NULL, one
// CURVE, sending the same encoded requests as the Go client.
func (b curveBench) measurePython(nullEP, curveEP string, serverPub curve.PublicKey) (null, curved []time.Duration, err error) {
	src, err := sourceDir()
	if err != nil {
		return nil, nil, err
	}
	var frames []byte
	for i := range b.spectra {
		frame := client.AppendPredictRequest(nil, fmt.Sprintf("bench-%d", i), 0, &b.spectra[i], nil)
		frames = binary.BigEndian.AppendUint32(frames, uint32(len(frame)))
		frames = append(frames, frame...)
	}
	framesPath := filepath.Join(b.dir, "curve-frames.bin")
	if err := os.WriteFile(framesPath, frames, 0o644); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(b.python, filepath.Join(src, "curve_client.py"), framesPath, nullEP, curveEP, serverPub.String(),
		fmt.Sprint(b.duration.Seconds()), fmt.Sprint(curveBlock))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, err
	}
	var lat struct{ Null, Curve []int64 }
	if err := json.Unmarshal(out.Bytes(), &lat); err != nil {
		return nil, nil, fmt.Errorf("curve_client.py output: %w", err)
	}
	toDurations := func(ns []int64) []time.Duration {
		d := make([]time.Duration, len(ns))
		for i, v := range ns {
			d[i] = time.Duration(v)
		}
		slices.Sort(d)
		return d
	}
	return toDurations(lat.Null), toDurations(lat.Curve), nil
}

// pct is the p-quantile of sorted latencies.
func pct(sorted []time.Duration, p float64) time.Duration {
	r := result{latencies: sorted}
	return r.percentile(p)
}

// diffUS is the difference of two quantiles, in microseconds.
func diffUS(a, b []time.Duration, p float64) float64 {
	return float64(pct(a, p)-pct(b, p)) / 1e3
}
