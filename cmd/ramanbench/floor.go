package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ramanserve/client"
	"ramanserve/server"
	"ramanserve/trainer"
)

// floorBench measures ramanserve against the transport floor: a C libzmq
// REP that answers every request with the same reply and does no work
// (c/floor_rep.c). Both are loaded by the same C libzmq REQ clients
// (c/floor_load.c) sending pre-encoded 2048-point predicts, so the client
// costs the same on both sides; the two alternate, 1 and then 8 clients,
// in each of -runs runs, and the figures are printed as ratios to the
// floor of the same run, then as the medians over the runs.
//
// ramanserve runs as a user runs it: its own process, the prediction log
// and metrics on (the defaults).
type floorBench struct {
	dir, serverBin string
	duration       time.Duration
	runs           int
	extraFlags     []string
	model          *trainer.Result
	spectra        []client.Spectrum
}

// floorFigures are one run's figures for one client count.
type floorFigures struct {
	clients             int
	server, floor       *result
	p95Ratio, thruRatio float64
	p50Excess           time.Duration
	// serverCPU and floorCPU are each server process's CPU per request.
	serverCPU, floorCPU time.Duration
	runtime             runtimeDelta
}

func (b floorBench) run(ctx context.Context) error {
	if b.serverBin == "" {
		return fmt.Errorf("-floor measures a ramanserve process: give -server bin/ramanserve")
	}
	loadBin, repBin, err := b.buildC()
	if err != nil {
		return err
	}
	requests, err := b.writeRequests()
	if err != nil {
		return err
	}
	regDir := filepath.Join(b.dir, "registry-floor")
	proc, version, err := startWithModel(ctx, regDir, b.model, server.ChannelConfig{})
	if err != nil {
		return err
	}
	if err := proc.Shutdown(ctx); err != nil {
		return err
	}
	srv, err := startServerProcess(ctx, b.serverBin, regDir, version, nil, b.extraFlags...)
	if err != nil {
		return err
	}
	defer srv.stop()

	// The floor sends a real reply of ramanserve's, so both answer with
	// the same bytes on the wire.
	replyFile := filepath.Join(b.dir, "reply.bin")
	if _, err := floorLoad(ctx, loadBin, srv.endpoint, 1, 200*time.Millisecond, requests, "FLOOR_SAVE_REPLY="+replyFile); err != nil {
		return fmt.Errorf("a first predict from the C client: %w", err)
	}
	floor, err := startFloorRep(repBin, replyFile)
	if err != nil {
		return err
	}
	defer floor.stop()

	fmt.Printf("C libzmq REQ clients, pre-encoded 2048-point predicts, %v per measurement; ramanserve %s %s; floor: C libzmq REP, no work; load average %s\n\n",
		b.duration, b.serverBin, strings.Join(b.extraFlags, " "), loadAverage())
	var all [2][]floorFigures
	for run := 1; run <= b.runs; run++ {
		for ci, clients := range []int{1, 8} {
			f := floorFigures{clients: clients}
			// Which side goes first alternates, so that neither always
			// follows the other's warm caches or leftovers.
			order := []bool{run%2 == 1, run%2 == 0}
			for _, serverTurn := range order {
				m, err := b.measure(ctx, loadBin, srv, floor, serverTurn, clients, requests)
				if err != nil {
					return err
				}
				if serverTurn {
					f.server, f.serverCPU, f.runtime = m.r, m.cpu, m.runtime
				} else {
					f.floor, f.floorCPU = m.r, m.cpu
				}
			}
			f.p95Ratio = float64(f.server.percentile(0.95)) / float64(f.floor.percentile(0.95))
			f.thruRatio = f.server.throughput() / f.floor.throughput()
			f.p50Excess = f.server.percentile(0.50) - f.floor.percentile(0.50)
			all[ci] = append(all[ci], f)
			fmt.Printf("run %d, %d client(s): ramanserve p50 %s p95 %s p99 %s %.0f/s %d errors | floor p50 %s p95 %s p99 %s %.0f/s %d errors | p95 %.2fx, throughput %.2fx, p50 %+.0fus\n",
				run, clients,
				us(f.server.percentile(0.50)), us(f.server.percentile(0.95)), us(f.server.percentile(0.99)), f.server.throughput(), f.server.errors,
				us(f.floor.percentile(0.50)), us(f.floor.percentile(0.95)), us(f.floor.percentile(0.99)), f.floor.throughput(), f.floor.errors,
				f.p95Ratio, f.thruRatio, float64(f.p50Excess.Nanoseconds())/1e3)
			fmt.Printf("    CPU per request: ramanserve %s, floor %s; ramanserve's runtime: %s\n",
				us(f.serverCPU), us(f.floorCPU), f.runtime.String(f.server.elapsed))
		}
	}
	fmt.Println()
	one, eight := all[0], all[1]
	fmt.Printf("medians over %d runs:\n", b.runs)
	fmt.Printf("  8 clients p95:        %.2fx the floor's (goal <= 1.30x)\n", median(eight, func(f floorFigures) float64 { return f.p95Ratio }))
	fmt.Printf("  8 clients throughput: %.2fx the floor's (goal >= 0.95x)\n", median(eight, func(f floorFigures) float64 { return f.thruRatio }))
	fmt.Printf("  1 client p50:         the floor's %+.0fus (goal <= +40us)\n", median(one, func(f floorFigures) float64 { return float64(f.p50Excess.Nanoseconds()) / 1e3 }))
	return nil
}

func median(fs []floorFigures, v func(floorFigures) float64) float64 {
	xs := make([]float64, len(fs))
	for i, f := range fs {
		xs[i] = v(f)
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// buildC compiles the two C programs with libzmq (make bench's deps-c
// installs it).
func (b floorBench) buildC() (load, rep string, err error) {
	src, err := sourceDir()
	if err != nil {
		return "", "", err
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "libzmq").Output()
	if err != nil {
		return "", "", fmt.Errorf("pkg-config libzmq: %w (make deps-c installs it)", err)
	}
	load, rep = filepath.Join(b.dir, "floor_load"), filepath.Join(b.dir, "floor_rep")
	for _, p := range []struct{ out, src string }{{load, "floor_load.c"}, {rep, "floor_rep.c"}} {
		args := append([]string{"-O2", "-pthread", "-o", p.out, filepath.Join(src, "c", p.src)}, strings.Fields(string(flags))...)
		if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("cc %s: %v\n%s", p.src, err, out)
		}
	}
	return load, rep, nil
}

// writeRequests encodes one predict per benchmark spectrum into a file of
// its own, the C client's input.
func (b floorBench) writeRequests() ([]string, error) {
	paths := make([]string, len(b.spectra))
	for i := range b.spectra {
		msg := client.AppendPredictRequest(nil, fmt.Sprintf("floor-%d", i), 1.8e9, &b.spectra[i], nil)
		paths[i] = filepath.Join(b.dir, fmt.Sprintf("request-%02d.bin", i))
		if err := os.WriteFile(paths[i], msg, 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// startFloorRep starts floor_rep on a free port with reply as its
// answer: a serverProcess without a management channel.
func startFloorRep(bin, reply string) (*serverProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &serverProcess{endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", port)}
	p.cmd = exec.Command(bin, p.endpoint, reply)
	if _, err := startUntilReady(p.cmd, 10*time.Second); err != nil {
		return nil, fmt.Errorf("floor_rep: %w", err)
	}
	return p, nil
}

// floorMeasurement is one measurement of one side.
type floorMeasurement struct {
	r       *result
	cpu     time.Duration // the server process's CPU per request
	runtime runtimeDelta  // ramanserve's only
}

// measure loads ramanserve (serverTurn) or the floor with clients C
// clients for b.duration, and reads the server process's CPU, and
// ramanserve's runtime figures, before and after.
func (b floorBench) measure(ctx context.Context, loadBin string, srv, floor *serverProcess, serverTurn bool, clients int, requests []string) (floorMeasurement, error) {
	target := floor
	if serverTurn {
		target = srv
	}
	var before *runtimeSample
	if serverTurn {
		var err error
		if before, err = sampleRuntime(ctx, srv.base); err != nil {
			return floorMeasurement{}, err
		}
	}
	cpu0, err := target.cpu()
	if err != nil {
		return floorMeasurement{}, err
	}
	r, err := floorLoad(ctx, loadBin, target.endpoint, clients, b.duration, requests, "")
	if err != nil {
		return floorMeasurement{}, err
	}
	cpu1, err := target.cpu()
	if err != nil {
		return floorMeasurement{}, err
	}
	m := floorMeasurement{r: r, cpu: (cpu1 - cpu0) / time.Duration(max(r.requests, 1))}
	if serverTurn {
		after, err := sampleRuntime(ctx, srv.base)
		if err != nil {
			return floorMeasurement{}, err
		}
		m.runtime = before.to(after)
	}
	return m, nil
}

// floorLoad runs floor_load and reads its figures.
func floorLoad(ctx context.Context, bin, endpoint string, clients int, d time.Duration, requests []string, env string) (*result, error) {
	args := append([]string{endpoint, strconv.Itoa(clients), strconv.FormatInt(d.Milliseconds(), 10)}, requests...)
	cmd := exec.CommandContext(ctx, bin, args...)
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("floor_load %s: %w", endpoint, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	head := strings.Fields(lines[0])
	if len(head) != 3 {
		return nil, fmt.Errorf("floor_load %s: first line %q", endpoint, lines[0])
	}
	r := &result{server: endpoint, clients: clients}
	r.requests, _ = strconv.Atoi(head[0])
	r.errors, _ = strconv.Atoi(head[1])
	ns, _ := strconv.ParseInt(head[2], 10, 64)
	r.elapsed = time.Duration(ns)
	r.latencies = make([]time.Duration, 0, len(lines)-1)
	for _, l := range lines[1:] {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("floor_load %s: %q", endpoint, l)
		}
		r.latencies = append(r.latencies, time.Duration(v))
	}
	if r.errors > 0 {
		return nil, fmt.Errorf("floor_load %s: %d errors of %d requests", endpoint, r.errors, r.requests+r.errors)
	}
	r.sort()
	return r, nil
}
