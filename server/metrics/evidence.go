package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
)

// PredictionLogStats gives the prediction log's counters (*predlog.Writer).
type PredictionLogStats interface {
	Stats() predlog.Stats
}

// ShadowTotals gives the shadow scorer's counters (*shadow.Scorer).
type ShadowTotals interface {
	Totals() shadow.Totals
}

// evidenceCollector reports, at scrape time, the counters the prediction
// log and the shadow scorer keep themselves: the hot path counts with one
// atomic addition there, and nothing here.
type evidenceCollector struct {
	log    PredictionLogStats
	shadow ShadowTotals

	logRecords  *prometheus.Desc
	logDeleted  *prometheus.Desc
	logQueue    *prometheus.Desc
	logSize     *prometheus.Desc
	logExplain  *prometheus.Desc
	shadowPreds *prometheus.Desc
	shadowQueue *prometheus.Desc
}

func newEvidenceCollector(src Sources) *evidenceCollector {
	name := func(n string) string { return prometheus.BuildFQName(Namespace, "", n) }
	return &evidenceCollector{
		log:    src.PredictionLog,
		shadow: src.Shadow,
		logRecords: prometheus.NewDesc(name("prediction_log_records_total"),
			`Prediction log records since start, by result: "committed" (in the database), "dropped" (the queue was full or the log closing; the reply never waits) and "write_failed" (their batch failed to commit: full disk, I/O error).`,
			[]string{"result"}, nil),
		logDeleted: prometheus.NewDesc(name("prediction_log_deleted_total"),
			"Prediction log records deleted by retention (-prediction-log-retention, -prediction-log-max-bytes) since start.",
			nil, nil),
		logQueue: prometheus.NewDesc(name("prediction_log_queue_depth"),
			"Records waiting in the prediction log's queue now.", nil, nil),
		logSize: prometheus.NewDesc(name("prediction_log_size_bytes"),
			"Size of the prediction log's database at its last check (pages in use times page size).", nil, nil),
		logExplain: prometheus.NewDesc(name("prediction_log_contributions_computed_total"),
			`Logged predictions above their T2 or Q limit whose contributions the log's writer computed since start (-log-exceedance-contributions), by result: "stored" and "failed" (the model refused the spectrum; the record is stored without them).`,
			[]string{"result"}, nil),
		shadowPreds: prometheus.NewDesc(name("shadow_predictions_total"),
			`Spectra offered to the shadow model since start, by result: "scored", "dropped" (its queue was full; the reply never waits) and "failed" (the shadow refused the spectrum).`,
			[]string{"result"}, nil),
		shadowQueue: prometheus.NewDesc(name("shadow_queue_depth"),
			"Spectra waiting for the shadow model now.", nil, nil),
	}
}

func (c *evidenceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.logRecords
	ch <- c.logDeleted
	ch <- c.logQueue
	ch <- c.logSize
	ch <- c.logExplain
	ch <- c.shadowPreds
	ch <- c.shadowQueue
}

func (c *evidenceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.log != nil {
		st := c.log.Stats()
		for _, v := range []struct {
			result string
			n      uint64
		}{{"committed", st.Committed}, {"dropped", st.Dropped}, {"write_failed", st.WriteFailed}} {
			ch <- prometheus.MustNewConstMetric(c.logRecords, prometheus.CounterValue, float64(v.n), v.result)
		}
		ch <- prometheus.MustNewConstMetric(c.logDeleted, prometheus.CounterValue, float64(st.Deleted))
		ch <- prometheus.MustNewConstMetric(c.logQueue, prometheus.GaugeValue, float64(st.Queued))
		ch <- prometheus.MustNewConstMetric(c.logSize, prometheus.GaugeValue, float64(st.SizeBytes))
		ch <- prometheus.MustNewConstMetric(c.logExplain, prometheus.CounterValue, float64(st.Explained), "stored")
		ch <- prometheus.MustNewConstMetric(c.logExplain, prometheus.CounterValue, float64(st.ExplainFailed), "failed")
	}
	if c.shadow != nil {
		t := c.shadow.Totals()
		for _, v := range []struct {
			result string
			n      uint64
		}{{"scored", t.Scored}, {"dropped", t.Dropped}, {"failed", t.Failed}} {
			ch <- prometheus.MustNewConstMetric(c.shadowPreds, prometheus.CounterValue, float64(v.n), v.result)
		}
		ch <- prometheus.MustNewConstMetric(c.shadowQueue, prometheus.GaugeValue, float64(t.Queued))
	}
}
