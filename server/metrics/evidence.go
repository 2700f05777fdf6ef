package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
	evidencesvc "ramanserve/service/evidence"
)

// PredictionLogStats gives the prediction log's counters (*predlog.Writer).
type PredictionLogStats interface {
	Stats() predlog.Stats
}

// ShadowTotals gives the shadow scorer's counters (*shadow.Scorer).
type ShadowTotals interface {
	Totals() shadow.Totals
}

// LabAgreement gives each version's agreement with the lab
// (*evidence.Lab).
type LabAgreement interface {
	Agreement() []evidencesvc.Agreement
}

// evidenceCollector reports, at scrape time, the counters the prediction
// log and the shadow scorer keep themselves: the hot path counts with one
// atomic addition there, and nothing here.
type evidenceCollector struct {
	log    PredictionLogStats
	shadow ShadowTotals
	lab    LabAgreement

	logRecords  *prometheus.Desc
	logDeleted  *prometheus.Desc
	logQueue    *prometheus.Desc
	logSize     *prometheus.Desc
	logWait     *prometheus.Desc
	logRaised   *prometheus.Desc
	logExplain  *prometheus.Desc
	shadowPreds *prometheus.Desc
	shadowQueue *prometheus.Desc
	labBias     *prometheus.Desc
	labRMSEP    *prometheus.Desc
	labPairs    *prometheus.Desc
}

func newEvidenceCollector(src Sources) *evidenceCollector {
	name := func(n string) string { return prometheus.BuildFQName(Namespace, "", n) }
	return &evidenceCollector{
		log:    src.PredictionLog,
		shadow: src.Shadow,
		lab:    src.Lab,
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
		logWait: prometheus.NewDesc(name("prediction_log_oldest_wait_seconds"),
			"How long the oldest record not yet committed to the prediction log has waited (0: none waits); past the promise (1 s) GET /health is degraded with prediction_log_behind.", nil, nil),
		logRaised: prometheus.NewDesc(name("prediction_log_writer_raised_total"),
			"Times the prediction log's writer was raised from idle to ordinary CPU priority because its oldest record waited past a quarter of the promise.", nil, nil),
		logExplain: prometheus.NewDesc(name("prediction_log_contributions_computed_total"),
			`Logged predictions above their T2 or Q limit whose contributions the log's writer computed since start (-log-exceedance-contributions), by result: "stored" and "failed" (the model refused the spectrum; the record is stored without them).`,
			[]string{"result"}, nil),
		shadowPreds: prometheus.NewDesc(name("shadow_predictions_total"),
			`Spectra offered to the shadow model since start, by result: "scored", "dropped" (its queue was full; the reply never waits) and "failed" (the shadow refused the spectrum).`,
			[]string{"result"}, nil),
		shadowQueue: prometheus.NewDesc(name("shadow_queue_depth"),
			"Spectra waiting for the shadow model now.", nil, nil),
		labBias: prometheus.NewDesc(name("lab_bias"),
			"Mean of predicted minus lab concentration (g/L) of a model version on an analyte, over the lab results matched to spectra of the last 7 days; recomputed when a lab post matches.",
			[]string{"version", "analyte"}, nil),
		labRMSEP: prometheus.NewDesc(name("lab_rmsep"),
			"Root mean squared error of prediction against the lab (g/L) of a model version on an analyte, over the lab results matched to spectra of the last 7 days; recomputed when a lab post matches.",
			[]string{"version", "analyte"}, nil),
		labPairs: prometheus.NewDesc(name("lab_pairs"),
			"Pairs of a predicted and a lab concentration that ramanserve_lab_bias and ramanserve_lab_rmsep are computed over.",
			[]string{"version", "analyte"}, nil),
	}
}

func (c *evidenceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.logRecords
	ch <- c.logDeleted
	ch <- c.logQueue
	ch <- c.logSize
	ch <- c.logWait
	ch <- c.logRaised
	ch <- c.logExplain
	ch <- c.shadowPreds
	ch <- c.shadowQueue
	ch <- c.labBias
	ch <- c.labRMSEP
	ch <- c.labPairs
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
		ch <- prometheus.MustNewConstMetric(c.logWait, prometheus.GaugeValue, st.OldestWait.Seconds())
		ch <- prometheus.MustNewConstMetric(c.logRaised, prometheus.CounterValue, float64(st.Raised))
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
	if c.lab != nil {
		for _, a := range c.lab.Agreement() {
			// Label values must be UTF-8 (or the scrape fails); an
			// imported version's name is the operator's.
			version, analyte := strings.ToValidUTF8(a.Version, "\uFFFD"), a.Analyte.String()
			ch <- prometheus.MustNewConstMetric(c.labBias, prometheus.GaugeValue, a.Bias, version, analyte)
			ch <- prometheus.MustNewConstMetric(c.labRMSEP, prometheus.GaugeValue, a.RMSEP, version, analyte)
			ch <- prometheus.MustNewConstMetric(c.labPairs, prometheus.GaugeValue, float64(a.N), version, analyte)
		}
	}
}
