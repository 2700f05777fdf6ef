package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/client"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/gen"
	"ramanserve/server"
	"ramanserve/trainer"
)

// The -evidence modes measure what the prediction log and shadow scoring
// cost the prediction channel, against ramanserve processes of
// -server:
//
//	cost:  8 clients at full rate against a server with the log and
//	       shadow scoring off (-prediction-log=false) and one with the log,
//	       -evidence-on-flags (default -log-spectra) and a shadow on; p95
//	       of each and their ratio (goal: within 10 %), errors (goal: 0).
//	paced: 1,000 predicts/s on an open-loop schedule for -duration with
//	       the log, -log-spectra and a shadow on; the records the log and
//	       the shadow dropped, from GET /health and GET /model/shadow
//	       (goal: 0 and 0).
//	soak:  -predictions predicts (1,000,000) at full rate to a server with
//	       a small -prediction-log-max-bytes (-max-bytes): the peak size of
//	       predictions.db with its WAL and shared memory, sampled every
//	       5 ms from outside, against the bound.
const (
	evidenceCost  = "cost"
	evidencePaced = "paced"
	evidenceSoak  = "soak"
)

// The "on" server runs with -evidence-on-flags (default -log-spectra);
// its shadow is set through PUT /model/shadow once it runs. The baseline
// ("off") runs with -evidence-off-flags (default -prediction-log=false)
// and without a shadow.

// benchScan is the scan context every predict of the -evidence modes
// carries, as a rig's would: the log stores it with each record.
var benchScan = &client.ScanContext{BatchID: "bench-batch-0001", Port: "P1", ColumnIndex: 3}

// evidenceBench is the setting of the -evidence modes.
type evidenceBench struct {
	dir, serverBin string
	offFlags       []string // the baseline's flags
	onFlags        []string // the flags of the server with the features on
	duration       time.Duration
	blocks         int // cost: alternating blocks per configuration
	clients        int
	rate           float64 // paced: predicts per second, all clients together
	predictions    int     // soak: predicts in all
	maxBytes       int64   // soak: -prediction-log-max-bytes
	// active is served by every server; shadow is staged beside it and
	// made the shadow where the features are on.
	active, shadow *trainer.Result
	spectra        []client.Spectrum
}

// evidenceServer is one ramanserve process under test and its
// management client.
type evidenceServer struct {
	name string
	proc *serverProcess
	mgmt *client.Management
}

// evidenceRegistry builds a registry with the active model loaded and the
// shadow candidate staged, and returns its directory and both versions.
func (b evidenceBench) evidenceRegistry(ctx context.Context) (regDir, active, shadow string, err error) {
	regDir = filepath.Join(b.dir, "registry-evidence")
	app, active, err := startWithModel(ctx, regDir, b.active, server.ChannelConfig{})
	if err != nil {
		return "", "", "", err
	}
	shadow, err = stageModel(ctx, app.Registry, b.shadow)
	if serr := app.Shutdown(context.Background()); err == nil {
		err = serr
	}
	return regDir, active, shadow, err
}

// startEvidenceServer starts a ramanserve process on a copy of the
// registry at src, with flags; with shadow set, it makes that version the
// shadow through the management API.
func (b evidenceBench) startEvidenceServer(ctx context.Context, name, src, active, shadow string, flags []string) (*evidenceServer, error) {
	regDir := filepath.Join(b.dir, "registry-"+name)
	if err := copyDir(src, regDir); err != nil {
		return nil, err
	}
	proc, err := startServerProcess(ctx, b.serverBin, regDir, active, nil, flags...)
	if err != nil {
		return nil, fmt.Errorf("%s server (%s): %w", name, strings.Join(flags, " "), err)
	}
	mgmt, err := client.NewManagement(proc.base)
	if err != nil {
		proc.stop()
		return nil, err
	}
	s := &evidenceServer{name: name, proc: proc, mgmt: mgmt}
	if shadow != "" {
		if err := s.setShadow(ctx, shadow); err != nil {
			proc.stop()
			return nil, fmt.Errorf("%s server: %w", name, err)
		}
	}
	return s, nil
}

func (s *evidenceServer) stop() { s.proc.stop() }

// setShadow is PUT /model/shadow.
func (s *evidenceServer) setShadow(ctx context.Context, version string) error {
	resp, err := s.mgmt.SetShadowWithResponse(ctx, gen.SetShadowJSONRequestBody{Version: version})
	if err != nil {
		return fmt.Errorf("PUT /model/shadow: %w", err)
	}
	if err := client.HTTPError(resp.HTTPResponse, resp.Body); err != nil {
		return fmt.Errorf("PUT /model/shadow: %w", err)
	}
	if resp.JSON200 == nil || resp.JSON200.Version == nil || *resp.JSON200.Version != version {
		return fmt.Errorf("PUT /model/shadow: the answer does not name %s: %s", version, resp.Body)
	}
	return nil
}

// evidenceCounts are the prediction log's and the shadow's counters, as
// GET /health and GET /model/shadow report them.
type evidenceCounts struct {
	logged        bool // /health has prediction_log
	recorded      int64
	dropped       int64
	queueDepth    int
	sizeBytes     int64
	shadowSet     bool
	shadowN       int64
	shadowDropped int64
}

// counts reads GET /health and GET /model/shadow.
func (s *evidenceServer) counts(ctx context.Context) (evidenceCounts, error) {
	var c evidenceCounts
	h, err := s.mgmt.GetHealthWithResponse(ctx)
	if err != nil {
		return c, fmt.Errorf("GET /health: %w", err)
	}
	if h.JSON200 == nil {
		return c, fmt.Errorf("GET /health: %d %s", h.StatusCode(), h.Body)
	}
	if pl := h.JSON200.PredictionLog; pl != nil {
		c.logged, c.recorded, c.dropped = true, pl.Recorded, pl.Dropped
		if pl.QueueDepth != nil {
			c.queueDepth = *pl.QueueDepth
		}
		if pl.SizeBytes != nil {
			c.sizeBytes = *pl.SizeBytes
		}
	}
	sh, err := s.mgmt.GetShadowWithResponse(ctx)
	if err != nil {
		return c, fmt.Errorf("GET /model/shadow: %w", err)
	}
	if sh.JSON200 == nil {
		return c, fmt.Errorf("GET /model/shadow: %d %s", sh.StatusCode(), sh.Body)
	}
	if sh.JSON200.Version != nil {
		c.shadowSet = true
		if cmp := sh.JSON200.Comparison; cmp != nil {
			c.shadowN = cmp.N
			if cmp.Dropped != nil {
				c.shadowDropped = *cmp.Dropped
			}
		}
	}
	return c, nil
}

// settled waits until the log's queue is empty and done holds (nil: the
// counters stop moving for a second), at most 30 s, and returns the
// counters: the writer and the shadow have caught up with the last
// predict.
func (s *evidenceServer) settled(ctx context.Context, done func(evidenceCounts) bool) (evidenceCounts, error) {
	deadline := time.Now().Add(30 * time.Second)
	last, err := s.counts(ctx)
	for still := 0; err == nil && time.Now().Before(deadline); {
		if last.queueDepth == 0 && (done != nil && done(last) || done == nil && still >= 4) {
			return last, nil
		}
		time.Sleep(250 * time.Millisecond)
		var c evidenceCounts
		if c, err = s.counts(ctx); err != nil {
			break
		}
		if c == last {
			still++
		} else {
			still = 0
		}
		last = c
	}
	return last, err
}

func (c evidenceCounts) String() string {
	if !c.logged && !c.shadowSet {
		return "prediction log off, no shadow"
	}
	s := "prediction log off"
	if c.logged {
		s = fmt.Sprintf("log: %d recorded, %d dropped, %.1f MiB", c.recorded, c.dropped, float64(c.sizeBytes)/(1<<20))
	}
	if c.shadowSet {
		s += fmt.Sprintf("; shadow: %d scored, %d dropped", c.shadowN, c.shadowDropped)
	}
	return s
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// evidenceCostRun measures the hot-path cost: two processes on copies of
// one registry, one with the log and shadow off, one with the log,
// -log-spectra and a shadow on, and blocks of the same closed-loop load
// alternating between them (off-on, on-off, ...), so that both see the
// same machine, drift of the other processes' load included. After each
// block the server's log and shadow catch up before the next begins.
func (b evidenceBench) evidenceCostRun(ctx context.Context) error {
	src, active, shadow, err := b.evidenceRegistry(ctx)
	if err != nil {
		return err
	}
	off, err := b.startEvidenceServer(ctx, "off", src, active, "", b.offFlags)
	if err != nil {
		return err
	}
	defer off.stop()
	on, err := b.startEvidenceServer(ctx, "on", src, active, shadow, b.onFlags)
	if err != nil {
		return err
	}
	defer on.stop()
	servers := [2]*evidenceServer{off, on}
	fmt.Printf("hot-path cost of the prediction log and shadow scoring: two ramanserve processes (%s) on copies of one registry\n", b.serverBin)
	fmt.Printf("  off: %s, no shadow\n", strings.Join(b.offFlags, " "))
	fmt.Printf("  on:  %s, shadow %s (active %s)\n", strings.Join(b.onFlags, " "), shadow, active)
	return b.alternate(ctx, servers, 1.10)
}

// alternate runs blocks of the same closed-loop load alternating between
// the two servers (0-1, 1-0, ...), so that both see the same machine,
// drift of the other processes' load included, and prints each one's
// latency, throughput and CPU per request, and the p95 ratio of the
// second to the first against goal. After each block the server's log
// and shadow catch up before the next begins.
func (b evidenceBench) alternate(ctx context.Context, servers [2]*evidenceServer, goal float64) error {
	var conns [2][]*client.PredictionClient
	var err error
	for i, s := range servers {
		if conns[i], err = dialClients(s.name, s.proc.endpoint, b.clients, b.spectra, benchScan); err != nil {
			return err
		}
		defer closeClients(conns[i])
	}
	block := b.duration / time.Duration(b.blocks)
	fmt.Printf("%d clients at full rate, 2048-point spectra with a scan context; %d alternating blocks of %v per configuration; GOMAXPROCS %d; load average %s\n\n",
		b.clients, b.blocks, block, runtime.GOMAXPROCS(0), loadAverage())

	results := [2]*result{{server: servers[0].name, clients: b.clients}, {server: servers[1].name, clients: b.clients}}
	var cpu0, cpu1 [2]time.Duration
	for i, s := range servers {
		if cpu0[i], err = s.proc.cpu(); err != nil {
			return err
		}
	}
	for k := range b.blocks {
		order := []int{0, 1}
		if k%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			results[i].add(closedLoop(servers[i].name, conns[i], block, b.spectra, benchScan))
			// The log's writer and the shadow catch up before the next
			// block, so that their backlog does not load the other server's.
			if _, err := servers[i].settled(ctx, nil); err != nil {
				return err
			}
		}
	}
	var counts [2]evidenceCounts
	for i, s := range servers {
		if counts[i], err = s.settled(ctx, nil); err != nil {
			return err
		}
		if cpu1[i], err = s.proc.cpu(); err != nil {
			return err
		}
	}

	fmt.Printf("%-6s %9s %9s %9s %9s %9s %7s %14s\n", "config", "requests", "p50", "p95", "p99", "req/s", "errors", "server CPU/req")
	for i, r := range results {
		r.sort()
		fmt.Printf("%-6s %9d %9s %9s %9s %9.0f %7d %14s\n", r.server, r.requests, us(r.percentile(0.50)), us(r.percentile(0.95)), us(r.percentile(0.99)),
			r.throughput(), r.errors, perRequest(cpu1[i]-cpu0[i], r.requests))
	}
	for i, s := range servers {
		fmt.Printf("%s: %s\n", s.name, counts[i])
	}
	ratio := float64(results[1].percentile(0.95)) / float64(results[0].percentile(0.95))
	errs := results[0].errors + results[1].errors
	fmt.Printf("\np95 %s / %s = %.3f (goal <= %.2f: %s); errors %d (goal 0: %s); load average after %s\n",
		servers[1].name, servers[0].name, ratio, goal, verdict(ratio <= goal), errs, verdict(errs == 0), loadAverage())
	fmt.Println("(server CPU/req: the process's own CPU time, writer and shadow included, per request; wall-clock latencies include time other processes held the cores)")
	return nil
}

// evidencePacedRun sends rate predicts per second on an open-loop schedule
// for the duration to a server with the log, -log-spectra and a shadow
// on, then reads what the log and the shadow dropped.
func (b evidenceBench) evidencePacedRun(ctx context.Context) error {
	src, active, shadow, err := b.evidenceRegistry(ctx)
	if err != nil {
		return err
	}
	on, err := b.startEvidenceServer(ctx, "on", src, active, shadow, b.onFlags)
	if err != nil {
		return err
	}
	defer on.stop()
	conns, err := dialClients(on.name, on.proc.endpoint, b.clients, b.spectra, benchScan)
	if err != nil {
		return err
	}
	defer closeClients(conns)
	before, err := on.settled(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Printf("sustained load with the prediction log and shadow scoring on: ramanserve process (%s) with %s, shadow %s (active %s)\n",
		b.serverBin, strings.Join(b.onFlags, " "), shadow, active)
	fmt.Printf("%.0f predicts/s on an open-loop schedule over %d clients for %v; GOMAXPROCS %d; load average %s\n\n",
		b.rate, b.clients, b.duration, runtime.GOMAXPROCS(0), loadAverage())
	r, late := openLoop(conns, b.rate, b.duration, b.spectra, benchScan)
	after, err := on.settled(ctx, func(c evidenceCounts) bool {
		// Every answered predict's active record, and the shadow's record
		// of each spectrum it scored, is committed or counted as dropped.
		return c.recorded+c.dropped-before.recorded-before.dropped >= int64(r.requests)+c.shadowN-before.shadowN
	})
	if err != nil {
		return err
	}
	r.sort()
	fmt.Printf("%9s %9s %9s %9s %9s %7s %16s\n", "requests", "rate/s", "p50", "p95", "p99", "errors", "sent late p50/p95")
	fmt.Printf("%9d %9.1f %9s %9s %9s %7d %16s\n", r.requests, r.throughput(), us(r.percentile(0.50)), us(r.percentile(0.95)), us(r.percentile(0.99)), r.errors,
		us(pct(late, 0.50))+"/"+us(pct(late, 0.95)))
	fmt.Printf("(latency: send to reply; rate: answered predicts from the first scheduled send to the last reply; sent late: behind the schedule, the client's previous predict still out or its goroutine not yet on a core)\n")
	fmt.Printf("during the run: log %d recorded, %d dropped; shadow %d scored, %d dropped\n",
		after.recorded-before.recorded, after.dropped-before.dropped, after.shadowN-before.shadowN, after.shadowDropped-before.shadowDropped)
	fmt.Printf("since start (GET /health, GET /model/shadow): %s\n", after)
	ok := after.logged && after.shadowSet && after.dropped == 0 && after.shadowDropped == 0
	fmt.Printf("\ndropped: log %d, shadow %d (goal 0 and 0: %s); errors %d; load average after %s\n",
		after.dropped, after.shadowDropped, verdict(ok), r.errors, loadAverage())
	return nil
}

// evidenceSoakRun sends b.predictions predicts at full rate to a server
// whose prediction log is bounded by b.maxBytes, and samples the size of
// the log's files on disk meanwhile: retention must keep them under the
// bound all along.
func (b evidenceBench) evidenceSoakRun(ctx context.Context) error {
	src, active, _, err := b.evidenceRegistry(ctx)
	if err != nil {
		return err
	}
	// Normal priority: at full rate an idle-priority writer would drop most
	// records, and the soak is about a million of them going through.
	flags := []string{"-prediction-log-max-bytes", fmt.Sprint(b.maxBytes), "-evidence-idle-priority=false"}
	s, err := b.startEvidenceServer(ctx, "soak", src, active, "", flags)
	if err != nil {
		return err
	}
	defer s.stop()
	conns, err := dialClients(s.name, s.proc.endpoint, b.clients, b.spectra, benchScan)
	if err != nil {
		return err
	}
	defer closeClients(conns)
	fmt.Printf("prediction log retention soak: ramanserve process (%s) with %s, no spectra, no shadow\n", b.serverBin, strings.Join(flags, " "))
	fmt.Printf("%d predicts at full rate over %d clients; the log's files (%s, -wal, -shm) sampled every 5 ms; GOMAXPROCS %d; load average %s\n\n",
		b.predictions, b.clients, sqlitelog.DatabaseFileName, runtime.GOMAXPROCS(0), loadAverage())
	peak := samplePeak(filepath.Join(b.dir, "registry-soak"))
	r := countLoop(conns, b.predictions, b.spectra, benchScan)
	after, err := s.settled(ctx, func(c evidenceCounts) bool {
		return c.recorded+c.dropped >= int64(r.requests+b.clients*warmUp)
	})
	if err != nil {
		return err
	}
	maxSeen := peak()
	fmt.Printf("%d predicts in %v (%.0f/s), %d errors; %s\n", r.requests, r.elapsed.Round(time.Millisecond), r.throughput(), r.errors, after)
	ok := maxSeen <= b.maxBytes && r.errors == 0
	fmt.Printf("\npeak size of the log's files %.2f MiB, bound %.2f MiB (%.0f %%; goal under the bound: %s); load average after %s\n",
		float64(maxSeen)/(1<<20), float64(b.maxBytes)/(1<<20), 100*float64(maxSeen)/float64(b.maxBytes), verdict(ok), loadAverage())
	return nil
}

// samplePeak samples the size of the prediction log's files in dir every
// 5 ms until the returned function is called, which returns the largest.
func samplePeak(dir string) func() int64 {
	size := func() int64 {
		var total int64
		for _, name := range []string{sqlitelog.DatabaseFileName, sqlitelog.DatabaseFileName + "-wal", sqlitelog.DatabaseFileName + "-shm"} {
			if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
				total += st.Size()
			}
		}
		return total
	}
	var peak int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, size())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return max(peak, size())
	}
}

// countLoop has the clients send n predicts in all, each its next as soon
// as the last is answered.
func countLoop(conns []*client.PredictionClient, n int, spectra []client.Spectrum, sc *client.ScanContext) *result {
	ctx := context.Background()
	var (
		next atomic.Int64
		mu   sync.Mutex
		all  = &result{server: "soak", clients: len(conns)}
		wg   sync.WaitGroup
	)
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, errs := 0, 0
			for j := next.Add(1) - 1; j < int64(n); j = next.Add(1) - 1 {
				if _, err := c.Predict(ctx, &spectra[j%int64(len(spectra))], sc); err != nil {
					errs++
					continue
				}
				done++
			}
			mu.Lock()
			all.requests += done
			all.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	return all
}

// openLoop sends rate predicts per second, spread over the clients in
// turn on a fixed schedule (predict j is due at start + j/rate, whatever
// became of the earlier ones), for d. It returns the latencies (send to
// reply) and, sorted, how late each predict went out: because its client
// was still waiting for the previous reply, or was not scheduled on a
// core in time.
func openLoop(conns []*client.PredictionClient, rate float64, d time.Duration, spectra []client.Spectrum, sc *client.ScanContext) (*result, []time.Duration) {
	ctx := context.Background()
	n := int(rate * d.Seconds())
	var (
		mu   sync.Mutex
		all  = &result{server: "on", clients: len(conns)}
		late = make([]time.Duration, 0, n)
		last time.Time
		wg   sync.WaitGroup
	)
	start := time.Now().Add(10 * time.Millisecond)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, n/len(conns)+1)
			behind := make([]time.Duration, 0, n/len(conns)+1)
			errs := 0
			var end time.Time
			for j := i; j < n; j += len(conns) {
				due := start.Add(time.Duration(float64(j) / rate * float64(time.Second)))
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
				t0 := time.Now()
				behind = append(behind, t0.Sub(due))
				_, err := c.Predict(ctx, &spectra[j%len(spectra)], sc)
				end = time.Now()
				if err != nil {
					errs++
					continue
				}
				lat = append(lat, end.Sub(t0))
			}
			mu.Lock()
			all.latencies = append(all.latencies, lat...)
			all.errors += errs
			late = append(late, behind...)
			if end.After(last) {
				last = end
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.elapsed = last.Sub(start)
	all.requests = len(all.latencies)
	slices.Sort(late)
	return all, late
}

func perRequest(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fus", float64(d)/float64(n)/1e3)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// copyDir copies the regular files and directories under src to dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(path, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
