package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/pgtest"
	"ramanserve/platform/race"
	"ramanserve/registry"
)

// startFleet runs n ramanserve processes sharing the PostgreSQL database
// at url (-store), each with a registry directory of its own (its cache
// of model files and import/).
func startFleet(t *testing.T, url string, n int, extra ...string) []*serverProcess {
	t.Helper()
	replicas := make([]*serverProcess, n)
	for i := range replicas {
		replicas[i] = startProcess(t, t.TempDir(), append([]string{"-store", url}, extra...)...)
	}
	return replicas
}

// fleetReply is one predict of the fleet test: which replica answered,
// when it was sent and answered, and the version it names.
type fleetReply struct {
	replica    int
	sent, recv time.Time
	version    string
}

// swapRecord is one load of the fleet test: the version, when the load
// was sent and when it answered.
type swapRecord struct {
	version    string
	sent, done time.Time
}

// activeDuring reports whether version was the fleet's active version at
// some moment of [from, to]: a version is active from when its load was
// sent until the next load answered (each load answers once every
// replica serves its version), the first from the start.
func activeDuring(swaps []swapRecord, version string, from, to time.Time) bool {
	for i, s := range swaps {
		if s.version != version {
			continue
		}
		start := s.sent
		if i == 0 {
			start = time.Time{}
		}
		end := time.Now().Add(time.Hour)
		if i+1 < len(swaps) {
			end = swaps[i+1].done
		}
		if !start.After(to) && !end.Before(from) {
			return true
		}
	}
	return false
}

// TestFleetSwapsUnderLoad: three replicas on one database, clients
// predicting on every replica without pause, loads sent to replicas
// chosen at random. Every reply carries exactly the output of the model
// it names, and names a version that was the fleet's active one at some
// moment while the request was in flight; no predict fails; once a load
// answers, every replica serves its version.
func TestFleetSwapsUnderLoad(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	url := pgtest.Database(t)
	clientsPerReplica, swaps := 8, 50
	if race.Enabled || testing.Short() {
		clientsPerReplica, swaps = 2, 12
	}
	fleet := startFleet(t, url, 3)
	a := trainStaged(t, "http://"+fleet[0].httpAddr, fleet[0].client(t), 303)
	b := trainStaged(t, "http://"+fleet[1].httpAddr, fleet[1].client(t), 404)
	wn, in := testSpectrum()
	probes := make([]*zmqClient, len(fleet))
	for i, p := range fleet {
		probes[i] = dialZMQ(t, p.zmq)
	}
	expected := map[string]client.Breakdown{}
	history := []swapRecord{}
	for i, v := range []string{b, a} {
		sent := time.Now()
		if code, err := activate(fleet[i].client(t), v); err != nil || code != 200 {
			t.Fatalf("load %s: %d %v", v, code, err)
		}
		history = append(history, swapRecord{version: v, sent: sent, done: time.Now()})
		for r, probe := range probes {
			_, pr := predictOnce(t, probe, wn, in)
			if pr.ModelVersion != v {
				t.Fatalf("when the load of %s answered, replica %d served %s", v, r, pr.ModelVersion)
			}
			expected[v] = pr.Concentrations
		}
	}
	if expected[a].Value == expected[b].Value {
		t.Fatal("the two models give identical outputs; the test could not see a mixed reply")
	}

	var (
		stop              atomic.Bool
		mixedOutput, fail atomic.Int64
		mu                sync.Mutex
		replies           []fleetReply
		wg                sync.WaitGroup
	)
	for r, p := range fleet {
		for range clientsPerReplica {
			c := dialZMQ(t, p.zmq)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []fleetReply
				defer func() { mu.Lock(); replies = append(replies, mine...); mu.Unlock() }()
				for !stop.Load() {
					frame, _ := goScenarioFrame("predict", wn, in)
					sent := time.Now()
					raw, err := c.roundTrip(frame, replyTimeout)
					recv := time.Now()
					if err != nil {
						fail.Add(1)
						t.Errorf("replica %d: predict during swaps: %v", r, err)
						return
					}
					rep, err := client.DecodeReply(raw)
					if err != nil || rep.Error != nil {
						fail.Add(1)
						t.Errorf("replica %d: predict during swaps: %v %v", r, err, rep)
						continue
					}
					pr, err := client.DecodePredictReply(rep.Body)
					if err != nil {
						fail.Add(1)
						continue
					}
					if want, ok := expected[pr.ModelVersion]; !ok || want.Value != pr.Concentrations.Value {
						mixedOutput.Add(1)
					}
					mine = append(mine, fleetReply{replica: r, sent: sent, recv: recv, version: pr.ModelVersion})
				}
			}()
		}
	}

	// fatal stops the clients first: a test that ends with them still
	// running would close their sockets under them.
	fatal := func(format string, args ...any) {
		t.Helper()
		stop.Store(true)
		wg.Wait()
		t.Fatalf(format, args...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var loadTimes []time.Duration
	busy, unavailable, lagging, late := 0, 0, 0, 0
	for i := range swaps {
		v := b
		if i%2 == 1 {
			v = a
		}
		r := rng.IntN(len(fleet))
		sent := time.Now()
		code, err := activate(fleet[r].client(t), v)
		done := time.Now()
		switch {
		case err == nil && code == 409:
			// Another replica was still catching up on the last swap
			// and held this one's load lock: retryable, and counted.
			busy++
			time.Sleep(10 * time.Millisecond)
			continue
		case err == nil && code == 503 && unavailable < 3:
			// The database did not answer in time (a starved machine):
			// retryable, nothing committed, counted; a few at most.
			unavailable++
			time.Sleep(100 * time.Millisecond)
			continue
		case err != nil || code != 200:
			fatal("swap %d to %s on replica %d: %d %v", i, v, r, code, err)
		}
		history = append(history, swapRecord{version: v, sent: sent, done: done})
		loadTimes = append(loadTimes, done.Sub(sent))
		for q, probe := range probes {
			if _, pr := predictOnce(t, probe, wn, in); pr.ModelVersion != v {
				// A load waits registry.ConvergeTimeout for the fleet, then
				// answers all the same (documented): a replica behind after
				// a wait that long is slow, not wrong. Sooner, the load
				// claimed a fleet it had not seen converge.
				if done.Sub(sent) >= registry.ConvergeTimeout {
					late++
					continue
				}
				lagging++
				t.Errorf("swap %d: when the load of %s on replica %d answered after %v, replica %d served %s", i, v, r, done.Sub(sent), q, pr.ModelVersion)
			}
		}
	}
	stop.Store(true)
	wg.Wait()

	notActive := 0
	for _, rep := range replies {
		if !activeDuring(history, rep.version, rep.sent, rep.recv) {
			notActive++
			if notActive <= 3 {
				t.Errorf("replica %d answered %s for a request in flight %s..%s, when it was not the fleet's active version",
					rep.replica, rep.version, rep.sent.Format("15:04:05.000000"), rep.recv.Format("15:04:05.000000"))
			}
		}
	}
	slices.Sort(loadTimes)
	pct := func(p float64) time.Duration { return loadTimes[min(len(loadTimes)-1, int(p*float64(len(loadTimes))))] }
	t.Logf("fleet of %d replicas, %d clients each: %d swaps from random replicas (%d answered LOAD_IN_PROGRESS, %d STORE_UNAVAILABLE), %d replies; %d with another model's output, %d naming a version not active during the request, %d failed; replicas not serving the new version when its load answered: %d (and %d after a load that waited its full %v for the fleet)",
		len(fleet), clientsPerReplica, len(loadTimes), busy, unavailable, len(replies), mixedOutput.Load(), notActive, fail.Load(), lagging, late, registry.ConvergeTimeout)
	t.Logf("fleet swap: time until all %d replicas serve the new version (the load's round trip, which answers when they do): p50 %v, p99 %v, max %v",
		len(fleet), pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), loadTimes[len(loadTimes)-1].Round(time.Microsecond))
	if mixedOutput.Load() != 0 || notActive != 0 || fail.Load() != 0 || lagging != 0 {
		t.Fatalf("%d mixed outputs, %d replies of an inactive version, %d failed predicts, %d lagging replicas", mixedOutput.Load(), notActive, fail.Load(), lagging)
	}
	if len(loadTimes) < swaps/2 {
		t.Fatalf("only %d of %d swaps happened", len(loadTimes), swaps)
	}
	seen := map[string]int{}
	for _, rep := range replies {
		seen[fmt.Sprint(rep.replica, rep.version)]++
	}
	for r := range fleet {
		for _, v := range []string{a, b} {
			if seen[fmt.Sprint(r, v)] == 0 {
				t.Errorf("replica %d never answered with %s: the swaps did not interleave with the load", r, v)
			}
		}
	}
}

// fleetLogCounts sums, over the replicas, what their prediction logs
// report in GET /health.
type fleetLogCounts struct {
	recorded, dropped, failed, queued int64
	// reasons are the replicas' degraded reasons; storeOK: none but the
	// log's catching up (prediction_log_behind), which a backlog
	// committing after the database came back may still give.
	reasons []string
	storeOK bool
}

func logCounts(t *testing.T, fleet []*serverProcess) (c fleetLogCounts, allOK bool) {
	t.Helper()
	allOK, c.storeOK = true, true
	for _, p := range fleet {
		h, err := p.client(t).GetHealthWithResponse(context.Background())
		if err != nil || h.JSON200 == nil {
			t.Fatalf("health: %v", err)
		}
		allOK = allOK && h.JSON200.Status == gen.Ok
		if h.JSON200.DegradedReasons != nil {
			for _, r := range *h.JSON200.DegradedReasons {
				c.reasons = append(c.reasons, r)
				c.storeOK = c.storeOK && strings.HasPrefix(r, "prediction_log_behind")
			}
		}
		if pl := h.JSON200.PredictionLog; pl != nil {
			c.recorded += pl.Recorded
			c.dropped += pl.Dropped
			if pl.WriteFailed != nil {
				c.failed += *pl.WriteFailed
			}
			if pl.QueueDepth != nil {
				c.queued += int64(*pl.QueueDepth)
			}
		}
	}
	return c, allOK
}

// TestFleetSurvivesTheDatabaseKilled: PostgreSQL killed with SIGKILL
// under load, kept down, then started again. No predict fails; health
// says degraded with the reason; within 5 s of the restart no reason is
// left but the logs' catching up (prediction_log_behind), and health is
// ok once they have committed their backlog;
// routes that need the store answer 503 STORE_UNAVAILABLE, retryable,
// with Retry-After; every predict answered is in the log or counted as
// dropped, none silently lost.
func TestFleetSurvivesTheDatabaseKilled(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	down := 30 * time.Second
	if race.Enabled || testing.Short() {
		down = 8 * time.Second
	}
	cluster := pgtest.NewCluster(t)
	fleet := startFleet(t, cluster.URL, 2)
	v := trainStaged(t, "http://"+fleet[0].httpAddr, fleet[0].client(t), 505)
	if code, err := activate(fleet[1].client(t), v); err != nil || code != 200 {
		t.Fatalf("load %s: %d %v", v, code, err)
	}
	wn, in := testSpectrum()
	var (
		stop           atomic.Bool
		answered, fail atomic.Int64
		wg             sync.WaitGroup
	)
	for r, p := range fleet {
		for range 2 {
			c := dialZMQ(t, p.zmq)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					frame, _ := goScenarioFrame("predict", wn, in)
					raw, err := c.roundTrip(frame, replyTimeout)
					if err != nil {
						fail.Add(1)
						t.Errorf("replica %d: predict: %v", r, err)
						return
					}
					rep, err := client.DecodeReply(raw)
					if err != nil || rep.Error != nil {
						fail.Add(1)
						t.Errorf("replica %d: predict: %v %v", r, err, rep)
						continue
					}
					answered.Add(1)
					// A steady rate, as a rig sends, rather than all the
					// machine can: the log's queue is the bound under test.
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if c, _ := logCounts(t, fleet); c.recorded > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a minute without 100 predictions logged")
		}
	}

	cluster.Kill(t)
	killed := time.Now()
	answeredAtKill := answered.Load()
	for r, p := range fleet {
		deadline := time.Now().Add(10 * time.Second)
		for {
			h := must(p.client(t).GetHealthWithResponse(context.Background()))(t)
			if h.JSON200 != nil && h.JSON200.Status == gen.Degraded && h.JSON200.DegradedReasons != nil &&
				slices.ContainsFunc(*h.JSON200.DegradedReasons, func(s string) bool { return strings.Contains(s, "shared store") }) {
				t.Logf("replica %d: health degraded %v after the kill: %q", r, time.Since(killed).Round(time.Millisecond), (*h.JSON200.DegradedReasons)[0])
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: health 10 s after the kill: %+v", r, h.JSON200)
			}
			time.Sleep(50 * time.Millisecond)
		}
		load := must(p.client(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: v}))(t)
		preds := must(p.client(t).ListPredictionsWithResponse(context.Background(), &gen.ListPredictionsParams{}))(t)
		for _, res := range []struct {
			what   string
			status int
			body   []byte
			retry  string
		}{
			{"POST /model/load", load.StatusCode(), load.Body, load.HTTPResponse.Header.Get("Retry-After")},
			{"GET /predictions", preds.StatusCode(), preds.Body, preds.HTTPResponse.Header.Get("Retry-After")},
		} {
			if res.status != 503 || !strings.Contains(string(res.body), `"STORE_UNAVAILABLE"`) || !strings.Contains(string(res.body), `"retryable":true`) || res.retry != "2" {
				t.Errorf("replica %d: %s with the database down: %d %s (Retry-After %q)", r, res.what, res.status, res.body, res.retry)
			}
		}
	}
	for time.Since(killed) < down {
		time.Sleep(100 * time.Millisecond)
	}
	answeredDown := answered.Load() - answeredAtKill
	cluster.Start(t)
	restarted := time.Now()
	// Within 5 s every replica has the store back: health is ok, or
	// degraded only while its log commits the backlog the outage left
	// (prediction_log_behind), which the drain below waits for.
	var backIn time.Duration
	for {
		if c, _ := logCounts(t, fleet); c.storeOK {
			backIn = time.Since(restarted)
			break
		}
		if time.Since(restarted) > 5*time.Second {
			c, _ := logCounts(t, fleet)
			stop.Store(true)
			wg.Wait() // the clients stop before the test does
			t.Fatalf("the store not back on every replica 5 s after the restart: %+v", c)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	var (
		c    fleetLogCounts
		okIn time.Duration // health ok on every replica, from the restart
	)
	// The writers retry every second at most and then commit up to two
	// queues of 8,192 records: on a loaded machine that takes a while.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		c, ok = logCounts(t, fleet)
		if ok && okIn == 0 {
			okIn = time.Since(restarted)
		}
		if ok && c.queued == 0 && c.recorded+c.dropped+c.failed == answered.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two minutes after the restart the logs still hold queued records: %+v, %d answered", c, answered.Load())
		}
	}
	rows := countRows(t, cluster.URL, `SELECT count(*) FROM predlog_records`)
	t.Logf("database down %v under load: %d predicts answered while it was down, %d in all, %d failed; the store back on every replica %v after the restart, health ok %v after it (the logs' backlog committed)", down, answeredDown, answered.Load(), fail.Load(), backIn.Round(time.Millisecond), okIn.Round(time.Millisecond))
	t.Logf("prediction log: %d rows in the database, %d reported recorded, %d dropped and counted (queue full), %d failed and counted; %d answered - rows - dropped - failed = %d silently lost",
		rows, c.recorded, c.dropped, c.failed, answered.Load(), answered.Load()-rows-c.dropped-c.failed)
	if fail.Load() != 0 || rows != c.recorded || answered.Load() != rows+c.dropped+c.failed {
		t.Fatalf("%d failed predicts; %d answered, %d rows, %d recorded, %d dropped, %d failed", fail.Load(), answered.Load(), rows, c.recorded, c.dropped, c.failed)
	}
	if answeredDown == 0 {
		t.Fatal("no predict was answered while the database was down")
	}
}

// countRows runs a count query on the database at url.
func countRows(t *testing.T, url, query string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFleetTrainingSurvivesItsRunnerKilled: a replica running a training
// job is killed with kill -9; another replica takes the job over once the
// lease runs out, finishes it, and exactly one model is staged; the job's
// record says it ran twice.
func TestFleetTrainingSurvivesItsRunnerKilled(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	url := pgtest.Database(t)
	const lease = 3 * time.Second
	runner := startFleet(t, url, 1, "-training-lease", lease.String())[0]
	// Enough rows that the fit lasts while the runner is killed.
	resp, body := multipartUpload(t, "http://"+runner.httpAddr, bytes.NewReader(syntheticCSV(t, 606, 1500)),
		[]byte(`{"operator":"conformance","notes":"killed runner"}`))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /training/start = %d %s", resp.StatusCode, body)
	}
	var acc gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		j := must(runner.client(t).GetTrainingJobWithResponse(context.Background(), acc.JobId))(t).JSON200
		if j != nil && j.Status == gen.Running {
			break
		}
		if time.Now().After(deadline) || (j != nil && (j.Status == gen.Done || j.Status == gen.Failed)) {
			t.Fatalf("the job did not run on the first replica: %+v", j)
		}
	}
	// The replica that takes over starts only now, so that the job could
	// only have been claimed by the runner.
	other := startFleet(t, url, 1, "-training-lease", lease.String())[0]
	runner.kill()
	killed := time.Now()
	job := waitJob(t, other.client(t), acc.JobId, 3*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("the job ended %s: %+v", job.Status, job.Error)
	}
	took := time.Since(killed)
	attempts := countRows(t, url, `SELECT attempts FROM training_jobs WHERE job_id = '`+acc.JobId+`'`)
	list := must(other.client(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
	staged := 0
	for _, m := range list.Models {
		if m.Version == job.Result.NewVersion {
			staged++
		}
	}
	t.Logf("training runner killed with kill -9: the job finished on the other replica %v later (lease %v), %d runs, %d models in the registry", took.Round(time.Millisecond), lease, attempts, len(list.Models))
	if job.Attempts == nil || *job.Attempts != 2 {
		t.Errorf("GET /training/{id} says attempts %v, want 2", job.Attempts)
	}
	if attempts != 2 || len(list.Models) != 1 || staged != 1 {
		t.Fatalf("%d runs, %d models staged (the job's %d)", attempts, len(list.Models), staged)
	}
}

// TestFleetStartRefusals: a server given a store it cannot use stops at
// once with exit status 1 and a message naming the problem, never the
// password, and writes nothing (its registry directory is not created).
func TestFleetStartRefusals(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	url := pgtest.Database(t)
	admin := pgtest.AdminURL(t)
	const secret = "n0t-the-Password"
	dir := t.TempDir()
	wrongPass := filepath.Join(dir, "wrong.pgpass")
	os.WriteFile(wrongPass, []byte("*:*:*:*:"+secret+"\n"), 0o600)
	// A role that may log in and nothing else: it cannot create the
	// schema in a database it does not own.
	pgtest.Exec(t, admin, `DROP ROLE IF EXISTS ramanserve_nogrants`)
	pgtest.Exec(t, admin, `CREATE ROLE ramanserve_nogrants LOGIN PASSWORD 'nogrants-pw'`)
	t.Cleanup(func() {
		pgtest.Exec(t, admin, `DROP OWNED BY ramanserve_nogrants`)
		pgtest.Exec(t, admin, `DROP ROLE IF EXISTS ramanserve_nogrants`)
	})
	noGrantsPass := filepath.Join(dir, "nogrants.pgpass")
	os.WriteFile(noGrantsPass, []byte("*:*:*:ramanserve_nogrants:nogrants-pw\n"), 0o600)
	// A peer that is not PostgreSQL: it greets as an SSH server does, and
	// hangs up.
	notPG := bannerServer(t, "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
	closed := refusingLoopbackPort(t)
	newer := pgtest.Database(t)
	p, err := pgdb.Open(context.Background(), newer, pgdb.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	pgtest.Exec(t, newer, `INSERT INTO ramanserve_schema_version (version_id, is_applied) VALUES (999999, true)`)

	withUser := func(u, user string) string { return strings.Replace(u, "ramanserve_test@", user+"@", 1) }
	cases := []struct {
		name, url, passfile, want string
	}{
		{"wrong password", url, wrongPass, "refused the role's credentials"},
		{"unreachable host", fmt.Sprintf("postgres://ramanserve_test@127.0.0.1:%d/x?sslmode=disable&connect_timeout=5", closed), "", "cannot reach the database"},
		{"not PostgreSQL", "postgres://ramanserve_test@" + notPG + "/x?sslmode=disable", "", "did not answer as PostgreSQL"},
		{"role without grants", withUser(url, "ramanserve_nogrants"), noGrantsPass, "lacks a privilege"},
		{"newer schema", newer, "", "newer than this server knows"},
		{"password in the URL", strings.Replace(url, "ramanserve_test@", "ramanserve_test:"+secret+"@", 1), "", "holds a password"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := filepath.Join(t.TempDir(), "registry")
			cmd := exec.Command(serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0", "-registry", reg, "-store", tc.url)
			if tc.passfile != "" {
				cmd.Env = append(os.Environ(), "PGPASSFILE="+tc.passfile)
			}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), secret) || strings.Contains(string(out), "nogrants-pw") {
				t.Fatalf("the message does not say %q, or holds the password:\n%s", tc.want, out)
			}
			if _, err := os.Stat(reg); !os.IsNotExist(err) {
				t.Fatalf("the refused start wrote its registry directory: %v", err)
			}
			t.Logf("%s: %s", tc.name, strings.TrimSpace(lastLine(string(out))))
		})
	}
}

// bannerServer accepts connections on a loopback port, writes banner to
// each and closes it; it returns the address.
func bannerServer(t *testing.T, banner string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(banner))
			c.Close()
		}
	}()
	return l.Addr().String()
}

// refusingLoopbackPort returns a loopback port that refuses connections
// for the rest of the test: a socket is bound to it and never listens.
// A port merely freed is not enough: a test running beside this one
// once bound it again, and the refused start met a peer that never
// answered, instead of a refusal.
func refusingLoopbackPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestFleetStopsWithTheDatabaseDown: SIGTERM while the database is down
// stops the replica within its shutdown grace: leaving the fleet, the
// heartbeat, the watchers and the store monitor do not wait for the
// database.
func TestFleetStopsWithTheDatabaseDown(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	cluster := pgtest.NewCluster(t)
	const grace = 3 * time.Second
	p := startFleet(t, cluster.URL, 1, "-shutdown-grace", grace.String())[0]
	cluster.Kill(t)
	c := dialZMQ(t, p.zmq)
	wn, in := testSpectrum()
	for range 50 {
		frame, _ := goScenarioFrame("ping", wn, in)
		if _, err := c.roundTrip(frame, replyTimeout); err != nil {
			t.Fatalf("ping with the database down: %v", err)
		}
	}
	start := time.Now()
	err := p.terminate(t)
	took := time.Since(start)
	t.Logf("SIGTERM with the database down: exit %v after %v (grace %v)", err, took.Round(time.Millisecond), grace)
	if took > grace+5*time.Second {
		t.Fatalf("the replica took %v to stop, its grace is %v", took, grace)
	}
}
