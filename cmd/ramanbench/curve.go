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

// curveServer is one of the two servers under test.
type curveServer struct {
	endpoint string
	stop     func()
	// cpu is the server's CPU time so far; nil when the server runs in
	// this process, where it cannot be told from the client's.
	cpu func() (time.Duration, error)
}

// curveSample is what one client measured against one server.
type curveSample struct {
	lat       []time.Duration // sorted
	clientCPU time.Duration   // the client's CPU time over its requests
	serverCPU time.Duration   // the server's over the same phase; -1: unknown
	served    int             // requests the server answered in that phase, warm-up included
}

func (s curveSample) perRequest(d time.Duration) string {
	if d < 0 || s.served == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fus", float64(d)/float64(s.served)/1e3)
}

// curveOverhead measures what CurveZMQ adds to a 2048-point predict round
// trip: two ramanserve servers with the same model, one NULL and one with
// -zmq-curve-secret-key, and one REQ client of each kind (the Go client;
// pyzmq, i.e. libzmq with libsodium) alternating blocks of requests
// between them. It prints p50 and p95 of each and the differences, and
// the CPU time per request of client and server, which, unlike the
// latencies, other processes on the machine do not inflate.
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
	nullSrv, err := b.startServer(ctx, "null", nil, "")
	if err != nil {
		return err
	}
	defer nullSrv.stop()
	curveSrv, err := b.startServer(ctx, "curve", curveOpts, keyFile)
	if err != nil {
		return err
	}
	defer curveSrv.stop()
	where := "in this process (the Go client's CPU includes the servers')"
	if b.serverBin != "" {
		where = "each its own process (" + b.serverBin + ")"
	}
	fmt.Printf("CurveZMQ overhead: a NULL and a CURVE ramanserve, %s, same model; one REQ client of each kind\n", where)
	fmt.Printf("alternating blocks of %d 2048-point predicts between them for %v each; GOMAXPROCS %d\n\n", curveBlock, b.duration, runtime.GOMAXPROCS(0))

	goNull, goCurve, err := b.measureGo(ctx, nullSrv, curveSrv, curveOpts)
	if err != nil {
		return fmt.Errorf("Go client: %w", err)
	}
	pyNull, pyCurve, err := b.measurePython(nullSrv, curveSrv, serverPub)
	if err != nil {
		return fmt.Errorf("pyzmq client: %w (make deps installs python3-zmq)", err)
	}
	fmt.Printf("%-16s %-9s %9s %9s %9s %12s %12s\n", "client", "mechanism", "requests", "p50", "p95", "client CPU", "server CPU")
	for _, r := range []struct {
		client, mech string
		s            curveSample
	}{{"Go client", "NULL", goNull}, {"Go client", "CURVE", goCurve}, {"pyzmq (libzmq)", "NULL", pyNull}, {"pyzmq (libzmq)", "CURVE", pyCurve}} {
		fmt.Printf("%-16s %-9s %9d %9s %9s %12s %12s\n", r.client, r.mech, len(r.s.lat), us(pct(r.s.lat, 0.50)), us(pct(r.s.lat, 0.95)),
			r.s.perRequest(r.s.clientCPU), r.s.perRequest(r.s.serverCPU))
	}
	fmt.Println("(CPU: per request, the client's and the server's own CPU time; wall-clock latencies include time other processes held the cores)")
	fmt.Println()
	for _, r := range []struct {
		client      string
		null, curve curveSample
	}{{"Go client", goNull, goCurve}, {"pyzmq (libzmq)", pyNull, pyCurve}} {
		fmt.Printf("CURVE overhead, %s: p50 %+.1fus, p95 %+.1fus; CPU per round trip %s client, %s server (goal: p50 <= 30us)\n", r.client,
			diffUS(r.curve.lat, r.null.lat, 0.50), diffUS(r.curve.lat, r.null.lat, 0.95),
			cpuDiff(r.curve, r.null, func(s curveSample) time.Duration { return s.clientCPU }),
			cpuDiff(r.curve, r.null, func(s curveSample) time.Duration { return s.serverCPU }))
	}
	return helloFlood(ctx, b, curveSrv, curveOpts, serverPub)
}

// cpuDiff is the difference of a CPU figure per request, "-" when unknown.
func cpuDiff(a, b curveSample, f func(curveSample) time.Duration) string {
	if f(a) < 0 || f(b) < 0 || a.served == 0 || b.served == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1fus", (float64(f(a))/float64(a.served)-float64(f(b))/float64(b.served))/1e3)
}

// startServer starts one ramanserve with the benchmark model on its own
// registry: in this process, or as a process of serverBin, with CURVE
// when keyFile is set.
func (b curveBench) startServer(ctx context.Context, name string, curveOpts *client.CurveOptions, keyFile string) (*curveServer, error) {
	regDir := filepath.Join(b.dir, "registry-"+name)
	var channel server.ChannelConfig
	if b.serverBin == "" {
		channel.Curve.SecretKeyFile = keyFile
	}
	app, version, err := startWithModel(ctx, regDir, b.model, channel)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	if b.serverBin == "" {
		return &curveServer{endpoint: app.ZMQEndpoint(), stop: func() { app.Shutdown(context.Background()) }}, nil
	}
	// The registry now names the model active; the process restores it.
	if err := app.Shutdown(ctx); err != nil {
		return nil, err
	}
	var extra []string
	if keyFile != "" {
		extra = []string{"-zmq-curve-secret-key", keyFile}
	}
	proc, err := startServerProcess(ctx, b.serverBin, regDir, version, curveOpts, extra...)
	if err != nil {
		return nil, fmt.Errorf("%s server process: %w", name, err)
	}
	return &curveServer{endpoint: proc.endpoint, stop: proc.stop, cpu: proc.cpu}, nil
}

// warmUp is how many requests each client sends each server before
// measuring.
const warmUp = 50

// serverCPUOver runs phase and returns each server's CPU time over it
// (-1 when unknown).
func serverCPUOver(servers [2]*curveServer, phase func() error) ([2]time.Duration, error) {
	var before, after [2]time.Duration
	read := func(dst *[2]time.Duration) error {
		for i, s := range servers {
			if s.cpu == nil {
				dst[i] = -1
				continue
			}
			d, err := s.cpu()
			if err != nil {
				return err
			}
			dst[i] = d
		}
		return nil
	}
	if err := read(&before); err != nil {
		return after, err
	}
	if err := phase(); err != nil {
		return after, err
	}
	if err := read(&after); err != nil {
		return after, err
	}
	for i := range after {
		if before[i] >= 0 {
			after[i] -= before[i]
		}
	}
	return after, nil
}

// measureGo: the Go client, a NULL and a CURVE PredictionClient.
func (b curveBench) measureGo(ctx context.Context, nullSrv, curveSrv *curveServer, curveOpts *client.CurveOptions) (null, curved curveSample, err error) {
	opts := client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1}
	cn, err := client.DialPrediction(ctx, nullSrv.endpoint, opts)
	if err != nil {
		return null, curved, err
	}
	defer cn.Close()
	opts.Curve = curveOpts
	cc, err := client.DialPrediction(ctx, curveSrv.endpoint, opts)
	if err != nil {
		return null, curved, err
	}
	defer cc.Close()
	k := 0
	run := func(c *client.PredictionClient, n int, s *curveSample) error {
		cpu0, err := threadsCPU("/proc/self/task")
		if err != nil {
			return err
		}
		for range n {
			spectrum := &b.spectra[k%len(b.spectra)]
			k++
			t0 := time.Now()
			if _, err := c.Predict(ctx, spectrum, nil); err != nil {
				return err
			}
			s.lat = append(s.lat, time.Since(t0))
		}
		cpu1, err := threadsCPU("/proc/self/task")
		s.clientCPU += cpu1 - cpu0
		return err
	}
	servers := [2]*curveServer{nullSrv, curveSrv}
	cpu, err := serverCPUOver(servers, func() error {
		var discard curveSample
		for _, c := range []*client.PredictionClient{cn, cc} {
			if err := run(c, warmUp, &discard); err != nil {
				return err
			}
		}
		for end := time.Now().Add(b.duration); time.Now().Before(end); {
			if err := run(cn, curveBlock, &null); err != nil {
				return fmt.Errorf("NULL: %w", err)
			}
			if err := run(cc, curveBlock, &curved); err != nil {
				return fmt.Errorf("CURVE: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return null, curved, err
	}
	for i, s := range []*curveSample{&null, &curved} {
		slices.Sort(s.lat)
		s.serverCPU = cpu[i]
		// The client's CPU is over the measured requests only, the
		// server's over the warm-up too: the same count for both.
		s.served = len(s.lat)
		if s.serverCPU >= 0 {
			s.serverCPU = s.serverCPU * time.Duration(len(s.lat)) / time.Duration(len(s.lat)+warmUp)
		}
	}
	return null, curved, nil
}

// measurePython runs curve_client.py: pyzmq REQ sockets, one NULL, one
// CURVE, sending the same encoded requests as the Go client.
func (b curveBench) measurePython(nullSrv, curveSrv *curveServer, serverPub curve.PublicKey) (null, curved curveSample, err error) {
	src, err := sourceDir()
	if err != nil {
		return null, curved, err
	}
	var frames []byte
	for i := range b.spectra {
		frame := client.AppendPredictRequest(nil, fmt.Sprintf("bench-%d", i), 0, &b.spectra[i], nil)
		frames = binary.BigEndian.AppendUint32(frames, uint32(len(frame)))
		frames = append(frames, frame...)
	}
	framesPath := filepath.Join(b.dir, "curve-frames.bin")
	if err := os.WriteFile(framesPath, frames, 0o644); err != nil {
		return null, curved, err
	}
	var out struct {
		Null, Curve       []int64
		NullCPU, CurveCPU int64 `json:",omitempty"`
	}
	cpu, err := serverCPUOver([2]*curveServer{nullSrv, curveSrv}, func() error {
		cmd := exec.Command(b.python, filepath.Join(src, "curve_client.py"), framesPath, nullSrv.endpoint, curveSrv.endpoint, serverPub.String(),
			fmt.Sprint(b.duration.Seconds()), fmt.Sprint(curveBlock), fmt.Sprint(warmUp))
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return err
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return fmt.Errorf("curve_client.py output: %w", err)
		}
		return nil
	})
	if err != nil {
		return null, curved, err
	}
	sample := func(ns []int64, clientCPU int64, serverCPU time.Duration) curveSample {
		s := curveSample{lat: make([]time.Duration, len(ns)), clientCPU: time.Duration(clientCPU), served: len(ns)}
		for i, v := range ns {
			s.lat[i] = time.Duration(v)
		}
		slices.Sort(s.lat)
		s.serverCPU = serverCPU
		if serverCPU >= 0 && len(ns) > 0 {
			s.serverCPU = serverCPU * time.Duration(len(ns)) / time.Duration(len(ns)+warmUp)
		}
		return s
	}
	return sample(out.Null, out.NullCPU, cpu[0]), sample(out.Curve, out.CurveCPU, cpu[1]), nil
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
