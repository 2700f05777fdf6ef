package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"ramanserve/trainer/jobs"
)

// jobStatuses are the status labels of ramanserve_training_jobs, in the
// order a job goes through them; each is reported, zero included.
var jobStatuses = [...]jobs.Status{jobs.Queued, jobs.Running, jobs.Done, jobs.Failed}

// stateCollector reports, at scrape time, what the server holds now: the
// active model, training jobs by status, open connections per channel.
// Reading them when Prometheus asks keeps them off the request paths.
type stateCollector struct {
	src Sources

	modelInfo   *prometheus.Desc
	modelLoaded *prometheus.Desc
	trainJobs   *prometheus.Desc
	openConns   *prometheus.Desc
}

func newStateCollector(src Sources) *stateCollector {
	return &stateCollector{
		src: src,
		modelInfo: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "active_model_info"),
			"The active model: always 1, labelled with its version and algorithm; absent when no model is loaded.",
			[]string{"version", "algorithm"}, nil),
		modelLoaded: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "model_loaded"),
			"1 when a model is active, 0 when none is loaded (predicts fail MODEL_NOT_LOADED).",
			nil, nil),
		trainJobs: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "training_jobs"),
			"Training jobs this server knows of, by status (records read at start-up included).",
			[]string{"status"}, nil),
		openConns: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "open_connections"),
			`Connections open now, by channel: "http" (management) and "zmq" (prediction, handshaking ones included).`,
			[]string{"channel"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.modelInfo
	ch <- c.modelLoaded
	ch <- c.trainJobs
	ch <- c.openConns
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Models != nil {
		c.collectModel(ch)
	}
	if c.src.Jobs != nil {
		counts := c.src.Jobs.CountByStatus()
		for _, s := range jobStatuses {
			ch <- prometheus.MustNewConstMetric(c.trainJobs, prometheus.GaugeValue, float64(counts[s]), string(s))
		}
	}
	if c.src.HTTPConns != nil {
		ch <- prometheus.MustNewConstMetric(c.openConns, prometheus.GaugeValue, float64(c.src.HTTPConns.OpenConnections()), "http")
	}
	if c.src.ChannelConns != nil {
		ch <- prometheus.MustNewConstMetric(c.openConns, prometheus.GaugeValue, float64(c.src.ChannelConns.OpenConnections()), "zmq")
	}
}

// collectModel reports the active model: the model can be swapped while
// Prometheus scrapes, so it is read once.
func (c *stateCollector) collectModel(ch chan<- prometheus.Metric) {
	m := c.src.Models.Active()
	if m == nil {
		ch <- prometheus.MustNewConstMetric(c.modelLoaded, prometheus.GaugeValue, 0)
		return
	}
	md := m.Metadata()
	ch <- prometheus.MustNewConstMetric(c.modelLoaded, prometheus.GaugeValue, 1)
	// Label values must be UTF-8 (or the scrape fails); an imported
	// file's algorithm name is whatever the file says.
	ch <- prometheus.MustNewConstMetric(c.modelInfo, prometheus.GaugeValue, 1,
		strings.ToValidUTF8(md.Version, "\uFFFD"), strings.ToValidUTF8(md.Algorithm, "\uFFFD"))
}
