package metrics

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
	"ramanserve/inference"
	"ramanserve/server/codec"
)

// metricsDoc is where the metrics are documented for operators: the
// table of the section "Metrics and alerts".
const metricsDoc = "../../docs/operations.md"

type logStats struct{}

func (logStats) Stats() predlog.Stats { return predlog.Stats{} }

type shadowTotals struct{}

func (shadowTotals) Totals() shadow.Totals { return shadow.Totals{} }

// everyFamily builds the registry with every source set and records one
// of each thing, so that every family the server can report is
// gathered, each with its labels.
func everyFamily(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	m := New(Sources{
		Models: &fixedModels{&namedModel{meta: inference.Metadata{Version: "v1", Algorithm: "PLS2-NIPALS"}}},
		Jobs:   jobCounts{}, HTTPConns: conns(1), ChannelConns: conns(1),
		PredictionLog: logStats{}, Shadow: shadowTotals{},
		Store: storeState{}, Fleet: fleetSize(1),
		Lab: agreement{{Version: "v1", Analyte: inference.EPA, N: 1}},
	})
	p := prediction(0.5, 0.5)
	p.Concentrations.Set(inference.EPA, 180)
	m.Channel().Predicted(p)
	m.Channel().Answered(codec.TypePredict, "", time.Microsecond)
	m.HTTP().Request("/health", "GET", 200, time.Millisecond)
	m.ModelLoad(nil)
	return gathered(t, m)
}

// docEntryRE matches a metric named in the first column of the table: a
// name, or a prefix with *, and its labels in braces.
var docEntryRE = regexp.MustCompile("`((?:ramanserve|go|process)_[a-z0-9_]*\\*?)(?:\\{([a-z_,]*)\\})?`")

// documentedMetrics reads the metrics table of metricsDoc: each name (or
// prefix ending in *) with its label names, sorted.
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Metrics and alerts\n")
	if !ok {
		t.Fatalf("%s: no section \"Metrics and alerts\"", metricsDoc)
	}
	_, table, ok := strings.Cut(section, "\n| metric | what |\n|---|---|\n")
	if !ok {
		t.Fatalf("%s: no table with the header | metric | what | in \"Metrics and alerts\"", metricsDoc)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			t.Fatalf("%s: table row %q", metricsDoc, line)
		}
		for _, m := range docEntryRE.FindAllStringSubmatch(cells[1], -1) {
			var labels []string
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
			}
			slices.Sort(labels)
			if _, dup := out[m[1]]; dup {
				t.Errorf("%s: %s is in the table twice", metricsDoc, m[1])
			}
			out[m[1]] = labels
		}
	}
	if len(out) < 10 {
		t.Fatalf("%s: only %d metrics in the table: %v", metricsDoc, len(out), out)
	}
	return out
}

// familyLabels are the label names of a family's series ("le" and
// "quantile" are the histogram's and summary's own), sorted.
func familyLabels(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if n := l.GetName(); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestMetricsTableIsComplete: the table of metrics in docs/operations.md
// names every family the server registers, with its labels, and nothing
// it does not.
func TestMetricsTableIsComplete(t *testing.T) {
	docs := documentedMetrics(t)
	fams := everyFamily(t)
	names := slices.Sorted(maps.Keys(fams))
	for _, name := range names {
		f := fams[name]
		if labels, ok := docs[name]; ok {
			if got := familyLabels(f); !slices.Equal(labels, got) {
				t.Errorf("%s: the table gives the labels %v, the server %v", name, labels, got)
			}
			continue
		}
		covered := false
		for doc := range docs {
			if prefix, ok := strings.CutSuffix(doc, "*"); ok && strings.HasPrefix(name, prefix) && !strings.HasPrefix(name, Namespace+"_") {
				covered = true
			}
		}
		if !covered {
			t.Errorf("%s (labels %v) is not in the table of %s", name, familyLabels(f), metricsDoc)
		}
	}
	for _, doc := range slices.Sorted(maps.Keys(docs)) {
		if strings.HasSuffix(doc, "*") {
			continue
		}
		if fams[doc] == nil {
			t.Errorf("the table of %s names %s, which the server does not register", metricsDoc, doc)
		}
	}
}
