// Command ramanbench measures the prediction channel: latency percentiles
// and throughput with 1 and 8 concurrent REQ clients sending 2048-point
// spectra, against ramanserve and, side by side in the same run with the
// same client, a Python reference server (pyzmq REP + msgpack +
// scikit-learn PLSRegression.predict, from Debian's packages).
//
//	go run ./cmd/ramanbench [-duration 5s] [-python /usr/bin/python3] [-server bin/ramanserve]
//
// Both servers get an equivalent model: ramanserve trains one on synthetic
// spectra, and the reference fits scikit-learn's PLSRegression with the same
// number of components on the same data.
//
//	go run ./cmd/ramanbench -curve [-server bin/ramanserve]
//
// measures the CurveZMQ round-trip overhead instead (curve.go): a NULL and
// a CURVE ramanserve with the same model, the Go client and pyzmq against
// each, p50 and p95 and their differences.
//
//	go run ./cmd/ramanbench -floor -server bin/ramanserve [-duration 5s] [-runs 3]
//
// measures ramanserve against the transport floor instead (floor.go): C
// libzmq clients against it and against a C libzmq REP that does no work,
// in the same run, as ratios.
//
//	go run ./cmd/ramanbench -evidence cost -server bin/ramanserve [-duration 16s] [-blocks 8]
//	go run ./cmd/ramanbench -evidence paced -server bin/ramanserve -duration 60s [-rate 1000]
//	go run ./cmd/ramanbench -evidence soak -server bin/ramanserve [-predictions 1000000] [-max-bytes 16777216]
//
// measure the prediction log and shadow scoring instead (evidence.go):
// their cost on the hot path, p95 with both on against both off, and the
// records dropped at a sustained rate, the log's size through a soak.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/server"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ramanbench:", err)
		os.Exit(1)
	}
}

type result struct {
	server    string
	clients   int
	requests  int
	errors    int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(p * float64(len(r.latencies)-1))
	return r.latencies[i]
}

func (r *result) throughput() float64 { return float64(r.requests) / r.elapsed.Seconds() }

func run() error {
	duration := flag.Duration("duration", 5*time.Second, "measuring time per server and client count")
	python := flag.String("python", "/usr/bin/python3", "Debian python3 with python3-zmq, python3-msgpack, python3-sklearn")
	samples := flag.Int("samples", 300, "synthetic training samples for the benchmark model")
	skipPython := flag.Bool("skip-python", false, "measure ramanserve only")
	serverBin := flag.String("server", "", "ramanserve binary to measure as its own process, like the reference (default: the server in this process)")
	curveMode := flag.Bool("curve", false, "measure the CurveZMQ round-trip overhead instead: a NULL and a CURVE server with the same model, the Go client and pyzmq against each")
	evidenceMode := flag.String("evidence", "", "measure the prediction log and shadow scoring instead, against -server processes: "+
		"'cost' (8 clients at full rate, without against with -log-spectra and a shadow, in alternating blocks: p95 of each), "+
		"'paced' (-rate predicts/s for -duration with both on: the records dropped) or "+
		"'soak' (-predictions predicts at full rate with -prediction-log-max-bytes -max-bytes: the peak size of the log's files)")
	blocks := flag.Int("blocks", 8, "-evidence cost: alternating blocks per configuration, -duration in all")
	clients := flag.Int("clients", 8, "-evidence: concurrent REQ clients")
	rate := flag.Float64("rate", 1000, "-evidence paced: predicts per second, all clients together")
	predictions := flag.Int("predictions", 1_000_000, "-evidence soak: predicts in all")
	maxBytes := flag.Int64("max-bytes", 16<<20, "-evidence soak: the server's -prediction-log-max-bytes")
	onFlags := flag.String("evidence-on-flags", "-log-spectra", "-evidence: ramanserve flags of the server with a shadow, space-separated")
	storeURL := flag.String("store", "", "-evidence store: postgres://… of the database the fleet server uses (the password from PGPASSFILE)")
	offFlags := flag.String("evidence-off-flags", "-prediction-log=false", "-evidence cost: extra ramanserve flags of the baseline, space-separated (it runs without -log-spectra and without a shadow)")
	opcuaMode := flag.Bool("opcua", false, "measure what the OPC UA server costs the prediction channel instead: p95 with -opcua-subscribers subscribers against OPC UA off, alternating -blocks blocks of -duration, against -server processes")
	opcuaSubscribers := flag.Int("opcua-subscribers", 10, "-opcua: OPC UA clients subscribed at 100 ms")
	floorMode := flag.Bool("floor", false, "measure a -server process against the transport floor instead: C libzmq REQ clients against it and against a no-work C libzmq REP, alternating, 1 and 8 clients, -runs runs of -duration each; p95, throughput and p50 as ratios to the floor")
	runs := flag.Int("runs", 3, "-floor: runs; the closing figures are their medians")
	floorFlags := flag.String("floor-server-flags", "", "-floor: extra ramanserve flags, space-separated (default: none, as a user runs it)")
	flag.Parse()
	ctx := context.Background()
	if *evidenceMode != "" && *evidenceMode != evidenceCost && *evidenceMode != evidencePaced && *evidenceMode != evidenceSoak && *evidenceMode != evidenceStore && *evidenceMode != evidenceFleetLog {
		return fmt.Errorf("-evidence %q: want %s, %s, %s, %s or %s", *evidenceMode, evidenceCost, evidencePaced, evidenceSoak, evidenceStore, evidenceFleetLog)
	}

	dir, err := os.MkdirTemp("", "ramanbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The model: trained here on synthetic spectra.
	fmt.Printf("training the benchmark model on %d synthetic spectra...\n", *samples)
	var csv bytes.Buffer
	if err := synth.New(synth.Config{Seed: 2026}).WriteCSV(ctx, &csv, *samples); err != nil {
		return err
	}
	csvPath := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(csvPath, csv.Bytes(), 0o644); err != nil {
		return err
	}
	ds := synth.New(synth.Config{Seed: 2026}).Dataset(*samples)
	res, err := trainer.Train(ctx, ds, trainer.Options{Seed: 1}, nil)
	if err != nil {
		return err
	}

	spectra := benchSpectra()
	if *evidenceMode != "" {
		if *serverBin == "" {
			return fmt.Errorf("-evidence measures ramanserve processes: give -server bin/ramanserve")
		}
		// The shadow candidate: a second model, on other synthetic spectra.
		shadowRes, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 2027}).Dataset(*samples), trainer.Options{Seed: 2}, nil)
		if err != nil {
			return err
		}
		b := evidenceBench{dir: dir, serverBin: *serverBin, offFlags: strings.Fields(*offFlags), onFlags: strings.Fields(*onFlags), duration: *duration, blocks: max(*blocks, 1), clients: max(*clients, 1), rate: *rate,
			predictions: *predictions, maxBytes: *maxBytes, active: res, shadow: shadowRes, spectra: spectra}
		switch *evidenceMode {
		case evidenceCost:
			return b.evidenceCostRun(ctx)
		case evidencePaced:
			return b.evidencePacedRun(ctx)
		case evidenceStore:
			return b.storeCostRun(ctx, *storeURL)
		case evidenceFleetLog:
			return b.fleetLogRun(ctx, *storeURL)
		}
		return b.evidenceSoakRun(ctx)
	}
	if *floorMode {
		return floorBench{dir: dir, serverBin: *serverBin, duration: *duration, runs: max(*runs, 1), extraFlags: strings.Fields(*floorFlags), model: res, spectra: spectra}.run(ctx)
	}
	if *opcuaMode {
		return opcuaBench{dir: dir, serverBin: *serverBin, duration: *duration, blocks: max(*blocks, 1), subscribers: *opcuaSubscribers, model: res, spectra: spectra}.run(ctx)
	}
	if *curveMode {
		return curveOverhead(ctx, curveBench{dir: dir, python: *python, serverBin: *serverBin, duration: *duration, model: res, spectra: spectra})
	}

	// ramanserve, the real server (registry, ZMTP, channel handler), in
	// this process on loopback.
	proc, version, err := startWithModel(ctx, filepath.Join(dir, "registry"), res, server.ChannelConfig{})
	if err != nil {
		return err
	}
	stopApp := sync.OnceValue(func() error { return proc.Shutdown(context.Background()) })
	defer stopApp()
	fmt.Printf("model %s: PLS2, %d components\n", version, res.Components)

	endpoint := proc.ZMQEndpoint()
	if *serverBin != "" {
		// The registry now names the model active; a separate process
		// restores it at start.
		if err := stopApp(); err != nil {
			return err
		}
		proc, err := startServerProcess(ctx, *serverBin, filepath.Join(dir, "registry"), version, nil)
		if err != nil {
			return fmt.Errorf("ramanserve process: %w", err)
		}
		defer proc.stop()
		endpoint = proc.endpoint
		fmt.Printf("ramanserve runs as its own process (%s)\n", *serverBin)
	}
	targets := []struct{ name, endpoint string }{{"ramanserve (Go)", endpoint}}
	if !*skipPython {
		ep, stop, err := startReference(*python, dir, csvPath, res.Components)
		if err != nil {
			return fmt.Errorf("python reference server: %w (use -skip-python to measure ramanserve alone)", err)
		}
		defer stop()
		targets = append(targets, struct{ name, endpoint string }{"python reference", ep})
	}

	fmt.Printf("load: 2048-point spectra, %v per run, GOMAXPROCS %d\n\n", *duration, runtime.GOMAXPROCS(0))
	var results []*result
	for _, clients := range []int{1, 8} {
		for _, tg := range targets {
			r, err := measure(tg.name, tg.endpoint, clients, *duration, spectra)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}

	fmt.Printf("%-18s %7s %9s %9s %9s %9s %11s %7s\n", "server", "clients", "requests", "p50", "p95", "p99", "req/s", "errors")
	for _, r := range results {
		fmt.Printf("%-18s %7d %9d %9s %9s %9s %11.0f %7d\n", r.server, r.clients, r.requests,
			us(r.percentile(0.50)), us(r.percentile(0.95)), us(r.percentile(0.99)), r.throughput(), r.errors)
	}
	if len(targets) == 2 {
		fmt.Println()
		for i := 0; i+1 < len(results); i += 2 {
			goRes, pyRes := results[i], results[i+1]
			fmt.Printf("throughput ratio, %d client(s): ramanserve / python = %.1fx\n", goRes.clients, goRes.throughput()/pyRes.throughput())
		}
	}
	return nil
}

// benchSpectra are the requests' 2048-point spectra.
func benchSpectra() []client.Spectrum {
	spectra := make([]client.Spectrum, 64)
	g := synth.New(synth.Config{Seed: 7})
	for i := range spectra {
		spectra[i] = client.Spectrum{Wavenumbers: synth.Axis(), Intensities: g.Next().Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: int64(i)}
	}
	return spectra
}

// startWithModel starts ramanserve in this process on loopback with a
// registry at regDir, and stages and loads the trained model there.
func startWithModel(ctx context.Context, regDir string, res *trainer.Result, channel server.ChannelConfig) (*app.App, string, error) {
	proc, err := app.Start(ctx, app.Config{
		HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: regDir, Channel: channel,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, "", err
	}
	version, err := stageModel(ctx, proc.Registry, res)
	if err == nil {
		_, err = proc.Registry.Load(ctx, registry.LoadRequest{Version: version})
	}
	if err != nil {
		proc.Shutdown(context.Background())
		return nil, "", err
	}
	return proc, version, nil
}

// stageModel adds the trained model to the registry as a staged version.
func stageModel(ctx context.Context, reg *registry.Registry, res *trainer.Result) (string, error) {
	version, _, err := reg.AddStaged(ctx, registry.StagedModel{
		Ext: ".npz", TrainedAt: res.Params.Meta.TrainedAt, Algorithm: res.Params.Meta.Algorithm,
		Write: func(v string, w io.Writer) error {
			p := *res.Params
			p.Meta.Version = v
			return inference.WriteArtifact(w, &p)
		},
	})
	return version, err
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fus", float64(d.Nanoseconds())/1e3) }

// measure runs clients concurrent REQ clients for d after a warm-up.
func measure(name, endpoint string, clients int, d time.Duration, spectra []client.Spectrum) (*result, error) {
	conns, err := dialClients(name, endpoint, clients, spectra, nil)
	if err != nil {
		return nil, err
	}
	defer closeClients(conns)
	r := closedLoop(name, conns, d, spectra, nil)
	r.sort()
	return r, nil
}

// dialClients connects clients REQ clients to endpoint and warms each up
// with 50 predicts (with the scan context sc; nil: none).
func dialClients(name, endpoint string, clients int, spectra []client.Spectrum, sc *client.ScanContext) ([]*client.PredictionClient, error) {
	ctx := context.Background()
	conns := make([]*client.PredictionClient, 0, clients)
	for range clients {
		c, err := client.DialPrediction(ctx, endpoint, client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1})
		if err != nil {
			closeClients(conns)
			return nil, err
		}
		conns = append(conns, c)
		for w := range warmUp {
			if _, err := c.Predict(ctx, &spectra[w%len(spectra)], sc); err != nil {
				closeClients(conns)
				return nil, fmt.Errorf("%s warm-up: %w", name, err)
			}
		}
	}
	return conns, nil
}

func closeClients(conns []*client.PredictionClient) {
	for _, c := range conns {
		c.Close()
	}
}

// closedLoop has every client send its next predict as soon as the last
// is answered, for d. The latencies it returns are unsorted.
func closedLoop(name string, conns []*client.PredictionClient, d time.Duration, spectra []client.Spectrum, sc *client.ScanContext) *result {
	ctx := context.Background()
	var (
		mu  sync.Mutex
		all = &result{server: name, clients: len(conns)}
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			errs := 0
			for k := i; time.Now().Before(deadline); k++ {
				t0 := time.Now()
				_, err := c.Predict(ctx, &spectra[k%len(spectra)], sc)
				if err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all.latencies = append(all.latencies, lat...)
			all.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	all.requests = len(all.latencies)
	return all
}

// add pools o's requests into r (blocks of one configuration).
func (r *result) add(o *result) {
	r.latencies = append(r.latencies, o.latencies...)
	r.requests += o.requests
	r.errors += o.errors
	r.elapsed += o.elapsed
}

// sort orders the latencies for percentile.
func (r *result) sort() { slices.Sort(r.latencies) }

// serverProcess is a ramanserve binary started by startServerProcess.
type serverProcess struct {
	endpoint string // the prediction channel
	base     string // the management channel, http://127.0.0.1:port
	cmd      *exec.Cmd
}

func (p *serverProcess) stop() { p.cmd.Process.Kill(); p.cmd.Wait() }

// cpu is the CPU time the process's threads have run so far: the sum of
// the first field of /proc/PID/task/*/schedstat (nanoseconds on a CPU),
// which, unlike wall time, does not count the time other processes held
// the cores.
func (p *serverProcess) cpu() (time.Duration, error) {
	return threadsCPU(fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid))
}

// threadsCPU sums the on-CPU nanoseconds of the threads under taskDir.
func threadsCPU(taskDir string) (time.Duration, error) {
	tasks, err := os.ReadDir(taskDir)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(taskDir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", taskDir, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// startServerProcess starts the ramanserve binary on the registry at
// regDir on free loopback ports, with extra flags, and waits until its
// prediction channel answers a ping naming version (over CURVE when
// curve is set).
func startServerProcess(ctx context.Context, bin, regDir, version string, curve *client.CurveOptions, extra ...string) (*serverProcess, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	zmqPort, err := freePort()
	if err != nil {
		return nil, err
	}
	endpoint := fmt.Sprintf("tcp://127.0.0.1:%d", zmqPort)
	args := append([]string{"-registry", regDir, "-http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "-zmq-addr", endpoint, "-log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProcess{endpoint: endpoint, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort), cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.DialPrediction(ctx, endpoint, client.PredictionOptions{Timeout: 200 * time.Millisecond, Retries: -1, Curve: curve})
		if err == nil {
			pong, err := c.Ping(ctx)
			c.Close()
			if err == nil && pong.ModelVersion == version {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not serve %s within 30s", bin, version)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startReference fits the reference model and starts ref_server.py on a
// free port.
func startReference(python, dir, csvPath string, components int) (string, func(), error) {
	src, err := sourceDir()
	if err != nil {
		return "", nil, err
	}
	model := filepath.Join(dir, "reference.joblib")
	fit := exec.Command(python, filepath.Join(src, "fit_reference.py"), csvPath, strconv.Itoa(components), model)
	if out, err := fit.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("fit: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	endpoint := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	stop, err := startUntilReady(exec.Command(python, filepath.Join(src, "ref_server.py"), endpoint, model), 60*time.Second)
	if err != nil {
		return "", nil, fmt.Errorf("ref_server.py: %w", err)
	}
	return endpoint, stop, nil
}

// startUntilReady starts cmd and waits until it prints a line READY (it
// has bound its socket), for at most within. stop kills it.
func startUntilReady(cmd *exec.Cmd, within time.Duration) (stop func(), err error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "READY" {
				ready <- true
				io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			stop()
			return nil, fmt.Errorf("exited before binding")
		}
	case <-time.After(within):
		stop()
		return nil, fmt.Errorf("did not bind within %v", within)
	}
	return stop, nil
}

// sourceDir finds the Python scripts next to this command's source.
func sourceDir() (string, error) {
	for _, dir := range []string{"cmd/ramanbench", "."} {
		if _, err := os.Stat(filepath.Join(dir, "ref_server.py")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("ref_server.py not found: run from the repository root")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
