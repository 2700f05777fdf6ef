// Package metrics holds the server's Prometheus metrics: one registry per
// server (no global registerer), the instruments the prediction channel
// and the management channel record into, the collectors that read the
// model, the training jobs and the open connections when Prometheus
// scrapes, and the Go runtime and process collectors.
//
// No label takes a value a client chooses. Codes, message types, HTTP
// methods and job statuses come from fixed lists (anything else is
// "other"); routes are the contract's templates. The model version
// appears in ramanserve_active_model_info, whose single series is built
// at scrape time, and in the lab's agreement gauges, whose versions are
// those in the registry (evidence.go).
//
// The prediction channel records through ChannelRecorder, whose series
// are all resolved when Metrics is built: recording a predict is a few
// atomic additions, without a map lookup or an allocation.
package metrics

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"ramanserve/inference"
	"ramanserve/platform/buildinfo"
	"ramanserve/server/contract"
	"ramanserve/trainer/jobs"
)

// Namespace prefixes every metric of the server.
const Namespace = "ramanserve"

// CodeOK is the code label of a request that succeeded (predictions,
// channel requests) and the result label of a model load that did.
const CodeOK = "OK"

// codeOther is the code of an answer whose contract code is not one the
// prediction channel documents (a bug; the label stays bounded).
const codeOther = "OTHER"

// Models gives the active model, nil when none is loaded (the registry).
type Models interface {
	Active() inference.Model
}

// JobCounter counts training jobs by status (jobs.Manager).
type JobCounter interface {
	CountByStatus() map[jobs.Status]int
}

// ConnectionCounter gives the connections a channel holds open now.
type ConnectionCounter interface {
	OpenConnections() int
}

// Sources are what the scrape-time collectors read. A nil source leaves
// its metrics out.
type Sources struct {
	Models       Models
	Jobs         JobCounter
	HTTPConns    ConnectionCounter // the management channel's listener
	ChannelConns ConnectionCounter // the prediction channel's ZMTP server
	// PredictionLog and Shadow are the prediction log and the shadow
	// scorer (evidence.go).
	PredictionLog PredictionLogStats
	Shadow        ShadowTotals
	// Store is the shared store's monitor (a fleet on PostgreSQL); nil
	// for the embedded store, which has no such metric.
	Store StoreState
	// Fleet counts the replicas alive (the fleet's heartbeat); nil
	// leaves ramanserve_fleet_replicas out.
	Fleet FleetSize
	// Lab gives each version's agreement with the lab (the lab service);
	// nil leaves the ramanserve_lab_* gauges out.
	Lab LabAgreement
	// Build labels ramanserve_build_info; the zero value reads the
	// running binary's (buildinfo.Read).
	Build buildinfo.Info
}

// FleetSize is how many replicas the fleet's membership saw alive
// (fleet.Heartbeat).
type FleetSize interface {
	ReplicasAlive() int
}

// StoreState is whether the shared store answers (pgdb.Monitor).
type StoreState interface {
	// Err is nil while the store answers.
	Err() (err error, since time.Time)
}

// Metrics is one server's registry and instruments. It is safe for
// concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	channel *ChannelRecorder
	http    *HTTPRecorder
	loads   *prometheus.CounterVec
}

// New builds the registry with every metric of the server, reading src
// at scrape time.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:     reg,
		channel: newChannelRecorder(reg),
		http:    newHTTPRecorder(reg),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "model_loads_total",
			Help: `Model loads asked for (POST /model/load), by result: "OK" or the contract error code.`,
		}, []string{"result"}),
	}
	reg.MustRegister(m.loads)
	m.loads.WithLabelValues(CodeOK)
	build := src.Build
	if build == (buildinfo.Info{}) {
		build = buildinfo.Read()
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help:        `Always 1, labelled with the server's version (the module version, "devel" when the build stamped none), the Go version it was built with, and the commit ("unknown" when the build did not stamp one; "-dirty": uncommitted changes).`,
		ConstLabels: prometheus.Labels{"version": build.Version, "goversion": build.GoVersion, "revision": build.Revision},
	}, func() float64 { return 1 }))
	if src.Store != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "store_up",
			Help: "1 while the shared store (the fleet's PostgreSQL database) answers, 0 while it does not; absent with the embedded store.",
		}, func() float64 {
			if err, _ := src.Store.Err(); err != nil {
				return 0
			}
			return 1
		}))
	}
	if src.Fleet != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "fleet_replicas",
			Help: "Replicas of the fleet seen alive (GET /fleet, not gone), this one included, at its last heartbeat that reached the store; 1 with the embedded store.",
		}, func() float64 { return float64(src.Fleet.ReplicasAlive()) }))
	}
	reg.MustRegister(
		// Beside the defaults, the runtime's figures of where a reply's
		// time goes under load: how long runnable goroutines wait for a
		// core, GC pauses, and time blocked on contended mutexes
		// (docs/performance.md reads them from a loaded server).
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: runtimeTailMetrics})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newStateCollector(src),
		newEvidenceCollector(src),
	)
	return m
}

// runtimeTailMetrics selects the runtime/metrics the Go collector adds:
// go_sched_latencies_seconds, go_sched_pauses_total_gc_seconds and
// go_sync_mutex_wait_total_seconds_total.
var runtimeTailMetrics = regexp.MustCompile(`^/(sched/latencies:seconds|sched/pauses/total/gc:seconds|sync/mutex/wait/total:seconds)$`)

// Registry is the server's registry, for tests and for gathering.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Channel is the prediction channel's recorder (channel.Options.Recorder).
func (m *Metrics) Channel() *ChannelRecorder { return m.channel }

// HTTP is the management channel's recorder.
func (m *Metrics) HTTP() *HTTPRecorder { return m.http }

// ModelLoad counts one model load: err nil is "OK", else its contract
// code (contract.Classify), a value from the contract's fixed list.
func (m *Metrics) ModelLoad(err error) {
	result := CodeOK
	if err != nil {
		result = string(contract.Classify(err).Code)
	}
	m.loads.WithLabelValues(result).Inc()
}

// ContentType is the media type of WriteText's output: the Prometheus
// text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText gathers every metric and writes it to w in the text
// exposition format (ContentType).
func (m *Metrics) WriteText(w io.Writer) error {
	families, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	return nil
}

// HTTPRecorder records the management channel's requests. Requests are
// not the hot path: series are made on first use, from bounded values.
type HTTPRecorder struct {
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
}

// RouteUnmatched is the route label of a request no route answered: an
// unknown path, or one refused before routing (the health reserve's 503).
const RouteUnmatched = "unmatched"

// methodOther is the method label of any method the API does not know.
const methodOther = "other"

// httpDurationBuckets span a GET /health (well under a millisecond) to a
// training upload of several hundred megabytes (minutes).
var httpDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

func newHTTPRecorder(reg prometheus.Registerer) *HTTPRecorder {
	r := &HTTPRecorder{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "http_requests_total",
			Help: `Management requests answered, by route template ("unmatched": none), method and status ("aborted": no answer was written).`,
		}, []string{"route", "method", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "http_request_duration_seconds",
			Help:    "Time from a management request's arrival to the end of its answer, by route template and method.",
			Buckets: httpDurationBuckets,
		}, []string{"route", "method"}),
	}
	reg.MustRegister(r.requests, r.durations)
	return r
}

// Request records one management request. route is the contract's
// template (e.g. /training/{jobId}), "" when no route matched; status 0
// means the request ended before any answer.
func (r *HTTPRecorder) Request(route, method string, status int, took time.Duration) {
	if route == "" {
		route = RouteUnmatched
	}
	method = boundedMethod(method)
	r.requests.WithLabelValues(route, method, statusLabel(status)).Inc()
	r.durations.WithLabelValues(route, method).Observe(took.Seconds())
}

// boundedMethod keeps the methods HTTP defines and maps any other token
// (net/http accepts any) to "other".
func boundedMethod(method string) string {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return method
	}
	return methodOther
}

// statusLabel is the status code in decimal, "aborted" for none. A
// handler writes only the codes net/http accepts (100 to 999).
func statusLabel(status int) string {
	if status < 100 || status > 999 {
		return "aborted"
	}
	return strconv.Itoa(status)
}
