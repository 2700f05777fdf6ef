package conformance

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"ramanserve/client"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/gen"
	"ramanserve/platform/race"
)

// commitAllowance is the time one commit of the prediction log may take on
// top of predlog.DefaultCommitInterval: what predlog documents kill -9 may
// lose is what was accepted less than the interval plus one commit before
// it. One commit is a few milliseconds; the allowance is generous because
// this machine's two cores may be shared with another whole make test
// (make test-under-load), where one fsync took 0.9 s, and the test logs
// how close to the kill the log actually got.
const commitAllowance = 2 * time.Second

// killRounds are the loads under which the test kills the server, one
// after the other on the same registry (the second kill hits a log that
// was itself recovered from the first): a paced load the log keeps up
// with (pacedRate predicts/s), and the clients' full rate, where the log's
// queue may hold a backlog that the documented bound does not cover.
var killRounds = []struct {
	rate     int           // predicts/s over all clients; 0: as fast as answered
	duration time.Duration // kill after this long under load
}{{pacedRate, 5 * time.Second}, {0, 4 * time.Second}}

// pacedRate is the paced round's load: well inside what the log commits
// with -log-spectra and a shadow (the bench sustains 1,000/s),
// on a machine whose cores the test shares.
const pacedRate = 400

// ack is a predict whose reply reached the client.
type ack struct {
	seq   int64
	at    time.Time // when the reply arrived
	reply *client.PredictReply
}

// predictLoad runs workers that predict at rate (over all workers; 0 as
// fast as the server answers), each over its own connection, until stop is
// closed or the connection fails (the server was killed). Every reply is
// recorded as an ack.
type predictLoad struct {
	mu      sync.Mutex
	acks    []ack
	wg      sync.WaitGroup
	stop    chan struct{}
	sent    atomic.Int64
	lastErr atomic.Pointer[string]
}

func startPredictLoad(t *testing.T, endpoint, batch string, round, workers, rate int, wn []float64, samples []scanSample) *predictLoad {
	t.Helper()
	l := &predictLoad{stop: make(chan struct{})}
	for w := range workers {
		// No resend: a resent request would be a second prediction of
		// the same scan_seq.
		cl, err := client.DialPrediction(context.Background(), endpoint, client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer cl.Close()
			var tick <-chan time.Time
			if rate > 0 {
				ticker := time.NewTicker(time.Duration(workers) * time.Second / time.Duration(rate))
				defer ticker.Stop()
				tick = ticker.C
			}
			for i := int64(0); ; i++ {
				if tick != nil {
					select {
					case <-l.stop:
						return
					case <-tick:
					}
				}
				select {
				case <-l.stop:
					return
				default:
				}
				seq := int64(round)*100_000_000 + int64(w)*1_000_000 + i
				s := samples[int(i)%len(samples)]
				l.sent.Add(1)
				rep, err := cl.Predict(context.Background(), &client.Spectrum{Wavenumbers: wn, Intensities: s.intensities, Channel: int64(w), IntegrationMS: 250, ScanSeq: seq},
					&client.ScanContext{BatchID: batch, Port: "P2", ColumnIndex: int64(w)})
				if err != nil {
					msg := err.Error()
					l.lastErr.Store(&msg)
					return
				}
				at := time.Now()
				l.mu.Lock()
				l.acks = append(l.acks, ack{seq: seq, at: at, reply: rep})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// firstAck is when the first reply arrived; false before any.
func (l *predictLoad) firstAck() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.acks) == 0 {
		return time.Time{}, false
	}
	return l.acks[0].at, true
}

func (l *predictLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// end stops the workers (those whose server is gone have stopped already)
// and returns the acks.
func (l *predictLoad) end() []ack {
	close(l.stop)
	l.wg.Wait()
	return l.acks
}

// integrityCheck opens the prediction log read-only (the crashed state as
// the kill left it, or beside the running server: WAL lets a reader in)
// and runs PRAGMA integrity_check. It returns the active rows of batch.
func integrityCheck(t *testing.T, dir, batch string) int {
	t.Helper()
	path := filepath.Join(dir, sqlitelog.DatabaseFileName)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`PRAGMA integrity_check`)
	if err != nil {
		t.Fatalf("integrity_check on %s: %v", path, err)
	}
	var res []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		res = append(res, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(res) != 1 || res[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check on the prediction log: %q, want ok", res)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM predictions WHERE batch_id = ? AND role = ?`, batch, int(predlog.RoleActive)).Scan(&n); err != nil {
		t.Fatalf("count the batch's rows: %v", err)
	}
	return n
}

// logSample is GET /health's prediction_log at one time.
type logSample struct {
	at                time.Time
	recorded, dropped int64
	queue             int
}

// sampleLog reads prediction_log from GET /health (ok false when the
// server does not answer or reports no prediction_log).
func sampleLog(c *gen.ClientWithResponses) (s logSample, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := c.GetHealthWithResponse(ctx)
	if err != nil || res.JSON200 == nil || res.JSON200.PredictionLog == nil {
		return s, false
	}
	pl := res.JSON200.PredictionLog
	s = logSample{at: time.Now(), recorded: pl.Recorded, dropped: pl.Dropped}
	if pl.QueueDepth != nil {
		s.queue = *pl.QueueDepth
	}
	return s, true
}

// backlogTime estimates how long the log's writer needed, at the kill, to
// commit what its queue held: the largest queue of the last half second
// over the writer's commit rate in the last two seconds. 0 when the queue
// was empty or the rate unknown.
func backlogTime(samples []logSample, kill time.Time) time.Duration {
	var recent []logSample
	for _, s := range samples {
		if kill.Sub(s.at) <= 2*time.Second {
			recent = append(recent, s)
		}
	}
	if len(recent) < 2 {
		return 0
	}
	first, last := recent[0], recent[len(recent)-1]
	rate := float64(last.recorded-first.recorded) / last.at.Sub(first.at).Seconds()
	queue := 0
	for _, s := range recent {
		if kill.Sub(s.at) <= 500*time.Millisecond {
			queue = max(queue, s.queue)
		}
	}
	if rate <= 0 || queue == 0 {
		return 0
	}
	return time.Duration(float64(queue) / rate * float64(time.Second))
}

// TestPredictionLogSurvivesKill9 is the "Must show: crash safety",
// against real ramanserve processes with -log-spectra and a shadow set:
// clients predict at full rate over the channel; the server is killed with SIGKILL mid-load;
// the crashed database passes PRAGMA integrity_check (opened read-only, as
// the kill left it); the server restarts on it and the load and the kill
// are repeated. After a last restart, GET /predictions holds every
// prediction whose reply arrived more than predlog.DefaultCommitInterval
// plus one commit (commitAllowance) before its kill, with the
// concentrations of that reply (less at most as many as the log counted
// dropped, should its writer fall behind the full-rate clients), and the
// database passes integrity_check beside the running server. The shadow
// is still set.
func TestPredictionLogSurvivesKill9(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	longProcessTest(t)
	dir := t.TempDir()
	// Normal priority: this test is about what a commit keeps. At idle
	// priority (the default) the full-rate round would drop records, counted,
	// instead of queueing them; the cost bench covers that trade.
	args := []string{"-log-spectra", "-evidence-idle-priority=false"}
	p := startProcess(t, dir, args...)
	c := p.client(t)
	version := trainStaged(t, "http://"+p.httpAddr, c, 404)
	candidate := trainStaged(t, "http://"+p.httpAddr, c, 405)
	loadVersion(t, c, version)
	// A shadow too: the log takes its records beside the active ones, and
	// the shadow must survive the kills.
	setShadow(t, c, candidate)
	wn, samples := evidenceSamples(1703, 16)
	batch := uniqueBatch("crash")

	type kill struct {
		at      time.Time
		acks    []ack
		dropped int64
		backlog time.Duration // the queue's commit time at the kill (full rate)
	}
	var kills []kill
	for round, load := range killRounds {
		if round > 0 {
			p = startProcess(t, dir, args...)
			c = p.client(t)
		}
		started := time.Now()
		clients := startPredictLoad(t, p.zmq, batch, round, 4, load.rate, wn, samples)
		// Under load for a while, and at a different point in each round.
		var samples []logSample
		dropped, maxQueue := int64(0), 0
		for time.Since(started) < load.duration {
			if e := clients.lastErr.Load(); e != nil {
				t.Fatalf("round %d: a client failed before the kill: %s", round, *e)
			}
			if s, ok := sampleLog(c); ok {
				samples = append(samples, s)
				dropped, maxQueue = max(dropped, s.dropped), max(maxQueue, s.queue)
			}
			time.Sleep(100 * time.Millisecond)
		}
		at := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		acks := clients.end()
		k := kill{at: at, acks: acks, dropped: dropped}
		if load.rate == 0 {
			k.backlog = backlogTime(samples, at)
		}
		kills = append(kills, k)
		rows := integrityCheck(t, dir, batch)
		t.Logf("round %d (%s): killed after %d replies (%d requests sent) in %v; the log's queue held up to %d records; the crashed log passes integrity_check and holds %d active rows of the batch",
			round, rateName(load.rate), len(acks), clients.sent.Load(), at.Sub(started).Round(time.Millisecond), maxQueue, rows)
	}

	p = startProcess(t, dir, args...)
	c = p.client(t)
	if res := must(c.GetHealthWithResponse(context.Background()))(t); res.StatusCode() != http.StatusOK {
		t.Fatalf("health after the restart: %d %s", res.StatusCode(), res.Body)
	}
	if sh := getShadow(t, c); sh.Version == nil || *sh.Version != candidate {
		t.Errorf("shadow after kill -9 and restart: %v, want %s", sh.Version, candidate)
	}
	roles := byRole(loggedPredictions(t, c, batch))
	logged := bySeq(t, roles[gen.PredictionRoleActive])
	integrityCheck(t, dir, batch)
	t.Logf("after the last restart: %d active and %d shadow records of the batch in the log", len(roles[gen.PredictionRoleActive]), len(roles[gen.PredictionRoleShadow]))

	for round, k := range kills {
		bound := predlog.DefaultCommitInterval + commitAllowance + k.backlog
		cutoff := k.at.Add(-bound)
		var due, present, missing int
		var firstMissing []int64
		closest, oldestMissing := time.Duration(-1), time.Duration(0)
		for _, a := range k.acks {
			rec, ok := logged[a.seq]
			if ok {
				present++
				sameAs(t, fmt.Sprintf("logged scan_seq %d", a.seq), rec, a.reply, 0)
				if rec.ModelVersion != version {
					t.Errorf("scan_seq %d logged for %s, want %s", a.seq, rec.ModelVersion, version)
				}
				if before := k.at.Sub(a.at); closest < 0 || before < closest {
					closest = before
				}
			}
			if a.at.Before(cutoff) {
				due++
				if !ok {
					missing++
					oldestMissing = max(oldestMissing, k.at.Sub(a.at))
					if len(firstMissing) < 5 {
						firstMissing = append(firstMissing, a.seq)
					}
				}
			}
		}
		// A record the log refused (its queue full: the writer fell
		// behind the full-rate clients on a busy machine) was never
		// committed, and is counted as dropped: the missing ones may be
		// those, and no more.
		if missing > 0 {
			sort.Slice(firstMissing, func(i, j int) bool { return firstMissing[i] < firstMissing[j] })
			report := t.Errorf
			if int64(missing) <= k.dropped {
				report = t.Logf
			}
			report("round %d: %d of the %d predictions answered more than %v before the kill are not in the log, the oldest answered %v before it (first: %v; the log reported %d dropped before the kill)",
				round, missing, due, bound, oldestMissing, firstMissing, k.dropped)
		}
		if due == 0 {
			t.Errorf("round %d: no reply arrived before the cutoff; the test proves nothing", round)
		}
		t.Logf("round %d: %d replies, %d due (answered > %v = interval %v + commit %v + backlog %v before the kill), all present: %v; %d of the %d replies in the log, the latest answered %v before the kill",
			round, len(k.acks), due, bound, predlog.DefaultCommitInterval, commitAllowance, k.backlog.Round(time.Millisecond), missing == 0, present, len(k.acks), closest.Round(time.Millisecond))
	}
}

func rateName(rate int) string {
	if rate == 0 {
		return "full rate"
	}
	return fmt.Sprintf("%d predicts/s", rate)
}

// promiseRounds is how many times TestPredictionLogKeepsItsPromise kills
// the server, and promiseLoad how long each round runs first. Under the
// race detector it kills twice: its eight clients, instrumented, hold
// both cores for the whole test, and make bench runs all five rounds
// without it.
const (
	promiseRounds = 5
	promiseLoad   = 3 * time.Second
)

// TestPredictionLogKeepsItsPromise: the server as a user runs it (the
// log's writer at idle priority, the default), 8 clients predicting as
// fast as it answers, killed with SIGKILL mid-load, 5 rounds (2 under
// the race detector) on the same registry. Every prediction answered
// more than the log's promise (predlog.DefaultPromise) before its kill is
// in the log after the last restart, or the log had counted at least as
// many records dropped or failed before the kill: nothing acknowledged is
// lost without a count.
func TestPredictionLogKeepsItsPromise(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	longProcessTest(t)
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	version := trainStaged(t, "http://"+p.httpAddr, c, 406)
	loadVersion(t, c, version)
	wn, samples := evidenceSamples(1709, 16)
	batch := uniqueBatch("promise")

	type kill struct {
		at        time.Time
		acks      []ack
		lostCount int64 // dropped + write_failed, last seen before the kill
		behind    bool  // health said prediction_log_behind before the kill
		// sampled is when the last health request that answered was
		// sent: the log's word on its backlog is as of then.
		sampled time.Time
	}
	var kills []kill
	rounds := promiseRounds
	if race.Enabled {
		rounds = 2
	}
	for round := range rounds {
		if round > 0 {
			p = startProcess(t, dir)
			c = p.client(t)
		}
		started := time.Now()
		clients := startPredictLoad(t, p.zmq, batch, round, 8, 0, wn, samples)
		var k kill
		// The round lasts its time, and until health has answered more
		// than the promise after the first reply: the promise is judged
		// as of the log's last word, so a round whose last health answer
		// came earlier (every later request late on a busy machine) has
		// no reply to judge.
		judgeable := func() bool {
			first, ok := clients.firstAck()
			return ok && !k.sampled.IsZero() && k.sampled.Sub(first) > predlog.DefaultPromise+100*time.Millisecond
		}
		for time.Since(started) < promiseLoad+time.Duration(round)*300*time.Millisecond || !judgeable() {
			if e := clients.lastErr.Load(); e != nil {
				t.Fatalf("round %d: a client failed before the kill: %s", round, *e)
			}
			if time.Since(started) > time.Minute {
				t.Fatalf("round %d: health did not answer a promise after the first reply within a minute of load", round)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			asked := time.Now()
			res, err := c.GetHealthWithResponse(ctx)
			cancel()
			if err == nil && res.JSON200 != nil && res.JSON200.PredictionLog != nil {
				k.sampled = asked
				pl := res.JSON200.PredictionLog
				k.lostCount = max(k.lostCount, pl.Dropped+orZero(pl.WriteFailed))
				if res.JSON200.DegradedReasons != nil {
					for _, r := range *res.JSON200.DegradedReasons {
						k.behind = k.behind || strings.HasPrefix(r, "prediction_log_behind")
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		k.at = time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		k.acks = clients.end()
		kills = append(kills, k)
		integrityCheck(t, dir, batch)
	}

	p = startProcess(t, dir)
	c = p.client(t)
	logged := bySeq(t, byRole(loggedPredictions(t, c, batch))[gen.PredictionRoleActive])
	for round, k := range kills {
		// The promise, judged as of the log's last word: a record the
		// writer had not committed a promise after it was answered shows
		// in health (prediction_log_behind) from then on, so one that
		// fell past it between the last health answer and the kill
		// (about 50 ms on a quiet machine) could not yet have been
		// reported; it is judged with that much more time.
		cutoff := k.at.Add(-predlog.DefaultPromise - k.at.Sub(k.sampled))
		due, missing := 0, 0
		for _, a := range k.acks {
			if !a.at.Before(cutoff) {
				continue
			}
			due++
			if _, ok := logged[a.seq]; !ok {
				missing++
			}
		}
		if due == 0 {
			t.Errorf("round %d: no reply arrived more than %v before the kill; the round proves nothing", round, predlog.DefaultPromise)
		}
		if int64(missing) > k.lostCount {
			t.Errorf("round %d: %d of the %d predictions answered more than %v before the kill are not in the log, and the log had counted only %d dropped or failed",
				round, missing, due, k.at.Sub(cutoff).Round(time.Millisecond), k.lostCount)
		}
		t.Logf("round %d: %d replies, %d answered more than %v before the kill (the promise, %v, and %v since the last health answer), %d of them missing (%d counted dropped or failed); health said prediction_log_behind: %v",
			round, len(k.acks), due, k.at.Sub(cutoff).Round(time.Millisecond), predlog.DefaultPromise, k.at.Sub(k.sampled).Round(time.Millisecond), missing, k.lostCount, k.behind)
	}
}

// orZero is *p, or 0 for nil.
func orZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
