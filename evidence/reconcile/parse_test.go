package reconcile_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

func TestParseJSONAndCSVAgree(t *testing.T) {
	js := `[
	  {"batch_id": "B-17", "scan_seq": 1042, "EPA": 181.5, "DHA": 92, "lab_sample_id": "HPLC-2291"},
	  {"batch_id": "B-17", "sampled_at": "2026-11-23T09:15:00.25+01:00", "DPA": 20.1, "EPA": null, "lab_sample_id": "HPLC-2292"}
	]`
	csvText := "\uFEFFlab_sample_id,batch_id,scan_seq,sampled_at,EPA,DHA,DPA\r\n" +
		"HPLC-2291,B-17,1042,,181.5,92,\r\n" +
		"HPLC-2292,B-17,,2026-11-23T08:15:00.25Z,,,20.1\r\n"
	fromJSON, err := reconcile.ParseJSON(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	fromCSV, err := reconcile.ParseCSV(strings.NewReader(csvText))
	if err != nil {
		t.Fatal(err)
	}
	if !sameRecords(fromJSON, fromCSV) {
		t.Fatalf("JSON %+v\nCSV %+v", fromJSON, fromCSV)
	}
	r := fromJSON[1]
	if r.HasScanSeq || !r.SampledAt.Equal(time.Date(2026, 11, 23, 8, 15, 0, 250e6, time.UTC)) || r.Lab != breakdown(-1, -1, 20.1) {
		t.Errorf("record 1: %+v", r)
	}
}

// TestParseRefuses: each bad post is refused with the record's index and
// the field named.
func TestParseRefuses(t *testing.T) {
	const ok = `{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S0"}`
	for _, tc := range []struct {
		name, json string
		index      int
		field      string
	}{
		{"not an array", `{"batch_id":"B"}`, -1, ""},
		{"empty array", `[]`, -1, ""},
		{"trailing content", `[` + ok + `] []`, -1, ""},
		{"unknown field", `[` + ok + `,{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S1","HPA":2}]`, 1, "HPA"},
		{"key twice", `[{"batch_id":"B","batch_id":"C","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"negative", `[{"batch_id":"B","scan_seq":1,"EPA":-0.5,"lab_sample_id":"S"}]`, 0, "EPA"},
		{"too large", `[{"batch_id":"B","scan_seq":1,"DHA":1e400,"lab_sample_id":"S"}]`, 0, "DHA"},
		{"number as string", `[{"batch_id":"B","scan_seq":1,"EPA":"1.5","lab_sample_id":"S"}]`, 0, "EPA"},
		{"id as number", `[{"batch_id":7,"scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"scan_seq fraction", `[{"batch_id":"B","scan_seq":1.5,"EPA":1,"lab_sample_id":"S"}]`, 0, "scan_seq"},
		{"scan_seq negative", `[{"batch_id":"B","scan_seq":-1,"EPA":1,"lab_sample_id":"S"}]`, 0, "scan_seq"},
		{"scan_seq over 2^53", `[{"batch_id":"B","scan_seq":9007199254740993,"EPA":1,"lab_sample_id":"S"}]`, 0, "scan_seq"},
		{"sampled_at without zone", `[{"batch_id":"B","sampled_at":"2026-11-23T08:15:00","EPA":1,"lab_sample_id":"S"}]`, 0, "sampled_at"},
		{"sampled_at before 1970", `[{"batch_id":"B","sampled_at":"0001-01-01T00:00:00Z","EPA":1,"lab_sample_id":"S"}]`, 0, "sampled_at"},
		{"no analyte", `[{"batch_id":"B","scan_seq":1,"lab_sample_id":"S"}]`, 0, ""},
		{"only null analytes", `[{"batch_id":"B","scan_seq":1,"EPA":null,"lab_sample_id":"S"}]`, 0, ""},
		{"neither seq nor time", `[{"batch_id":"B","EPA":1,"lab_sample_id":"S"}]`, 0, ""},
		{"no lab_sample_id", `[{"batch_id":"B","scan_seq":1,"EPA":1}]`, 0, "lab_sample_id"},
		{"no batch_id", `[{"scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"duplicate lab_sample_id", `[` + ok + `,` + ok + `]`, 1, "lab_sample_id"},
		{"empty id", `[{"batch_id":"","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"long id", `[{"batch_id":"` + strings.Repeat("b", reconcile.MaxIDBytes+1) + `","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"control character", `[{"batch_id":"B\u0007","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"surrounding space", `[{"batch_id":"B ","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id"},
		{"not an object", `[` + ok + `,3]`, 1, ""},
		{"invalid UTF-8", "[{\"batch_id\":\"B\xff\",\"scan_seq\":1,\"EPA\":1,\"lab_sample_id\":\"S\"}]", -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reconcile.ParseJSON(strings.NewReader(tc.json))
			checkRecordError(t, err, tc.index, tc.field)
		})
	}
}

func TestParseCSVRefuses(t *testing.T) {
	const header = "batch_id,scan_seq,EPA,lab_sample_id\n"
	for _, tc := range []struct {
		name, csv string
		index     int
		field     string
	}{
		{"empty", "", -1, ""},
		{"header only", header, -1, ""},
		{"unknown column", "batch_id,scan_seq,EPA,lab_sample_id,note\nB,1,1,S,x\n", -1, "note"},
		{"column twice", "batch_id,scan_seq,EPA,EPA,lab_sample_id\n", -1, "EPA"},
		{"no lab_sample_id column", "batch_id,scan_seq,EPA\nB,1,1\n", -1, "lab_sample_id"},
		{"no analyte column", "batch_id,scan_seq,lab_sample_id\nB,1,S\n", -1, ""},
		{"no seq or time column", "batch_id,EPA,lab_sample_id\nB,1,S\n", -1, ""},
		{"wrong cell count", header + "B,1,1,S\nB,2,1\n", 1, ""},
		{"NaN", header + "B,1,NaN,S\n", 0, "EPA"},
		{"Inf", header + "B,1,+Inf,S\n", 0, "EPA"},
		{"hexadecimal", header + "B,1,0x1p3,S\n", 0, "EPA"},
		{"underscore", header + "B,1,1_0,S\n", 0, "EPA"},
		{"leading plus", header + "B,1,+1,S\n", 0, "EPA"},
		{"scan_seq plus", header + "B,+1,1,S\n", 0, "scan_seq"},
		{"empty analyte and seq", header + "B,,,S\n", 0, ""},
		{"bare quote", header + "B,1,1,S\"x\n", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reconcile.ParseCSV(strings.NewReader(tc.csv))
			checkRecordError(t, err, tc.index, tc.field)
		})
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("batch_id,scan_seq,EPA,lab_sample_id\n")
	for i := range reconcile.MaxRecords + 1 {
		b.WriteString("B,1,1,S" + strconv.Itoa(i) + "\n")
	}
	_, err := reconcile.ParseCSV(strings.NewReader(b.String()))
	checkRecordError(t, err, reconcile.MaxRecords, "")

	big := "[" + strings.Repeat(" ", reconcile.MaxInputBytes) + "]"
	_, err = reconcile.ParseJSON(strings.NewReader(big))
	checkRecordError(t, err, -1, "")
}

func checkRecordError(t *testing.T, err error, index int, field string) {
	t.Helper()
	if !errors.Is(err, reconcile.ErrInvalidLabRecords) {
		t.Fatalf("error %v does not wrap ErrInvalidLabRecords", err)
	}
	var re *reconcile.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *RecordError", err)
	}
	if re.Index != index || re.Field != field {
		t.Errorf("error %q names record %d, field %q; want %d, %q", err, re.Index, re.Field, index, field)
	}
}

func sameRecords(a, b []reconcile.LabRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.BatchID != y.BatchID || x.LabSampleID != y.LabSampleID || x.HasScanSeq != y.HasScanSeq ||
			x.ScanSeq != y.ScanSeq || !x.SampledAt.Equal(y.SampledAt) || x.Lab != y.Lab {
			return false
		}
	}
	return true
}

// encodeJSON and encodeCSV write records back in the formats the parsers
// read, for round trips.
func encodeJSON(records []reconcile.LabRecord) []byte {
	objs := make([]map[string]any, len(records))
	for i, r := range records {
		o := map[string]any{"batch_id": r.BatchID, "lab_sample_id": r.LabSampleID}
		if r.HasScanSeq {
			o["scan_seq"] = r.ScanSeq
		}
		if !r.SampledAt.IsZero() {
			o["sampled_at"] = r.SampledAt.Format(time.RFC3339Nano)
		}
		for a := range inference.Analyte(inference.NumAnalytes) {
			if r.Lab.Valid[a] {
				o[a.String()] = r.Lab.Value[a]
			}
		}
		objs[i] = o
	}
	b, err := json.Marshal(objs)
	if err != nil {
		panic(err)
	}
	return b
}

func encodeCSV(records []reconcile.LabRecord) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"batch_id", "scan_seq", "sampled_at", "EPA", "DHA", "DPA", "lab_sample_id"})
	for _, r := range records {
		row := []string{r.BatchID, "", "", "", "", "", r.LabSampleID}
		if r.HasScanSeq {
			row[1] = strconv.FormatInt(r.ScanSeq, 10)
		}
		if !r.SampledAt.IsZero() {
			row[2] = r.SampledAt.Format(time.RFC3339Nano)
		}
		for a := range inference.NumAnalytes {
			if r.Lab.Valid[a] {
				row[3+a] = strconv.FormatFloat(r.Lab.Value[a], 'g', -1, 64)
			}
		}
		w.Write(row)
	}
	w.Flush()
	return buf.Bytes()
}

// checkParsed checks the rules every parsed post obeys, and that it
// round-trips through both formats.
func checkParsed(t *testing.T, records []reconcile.LabRecord) {
	t.Helper()
	if len(records) == 0 || len(records) > reconcile.MaxRecords {
		t.Fatalf("%d records", len(records))
	}
	ids := map[string]bool{}
	for i, r := range records {
		for _, id := range []string{r.BatchID, r.LabSampleID} {
			if id == "" || len(id) > reconcile.MaxIDBytes || strings.TrimSpace(id) != id || strings.IndexFunc(id, unicode.IsControl) >= 0 {
				t.Fatalf("record %d: id %q", i, id)
			}
		}
		if ids[r.LabSampleID] {
			t.Fatalf("record %d: lab_sample_id %q twice", i, r.LabSampleID)
		}
		ids[r.LabSampleID] = true
		if r.Lab == (inference.Breakdown{}) || (!r.HasScanSeq && r.SampledAt.IsZero()) {
			t.Fatalf("record %d: %+v", i, r)
		}
		if r.HasScanSeq && (r.ScanSeq < 0 || r.ScanSeq > reconcile.MaxScanSeq) {
			t.Fatalf("record %d: scan_seq %d", i, r.ScanSeq)
		}
		for a, x := range r.Lab.Value {
			if r.Lab.Valid[a] && (!(x >= 0 && x <= reconcile.MaxConcentration) || math.Signbit(x)) {
				t.Fatalf("record %d: analyte %d: %v", i, a, x)
			}
			if !r.Lab.Valid[a] && x != 0 {
				t.Fatalf("record %d: invalid analyte %d holds %v", i, a, x)
			}
		}
	}
	for name, encoded := range map[string][]byte{"JSON": encodeJSON(records), "CSV": encodeCSV(records)} {
		parse := reconcile.ParseJSON
		if name == "CSV" {
			parse = reconcile.ParseCSV
		}
		back, err := parse(bytes.NewReader(encoded))
		if err != nil {
			t.Fatalf("%s of parsed records does not parse: %v\n%s", name, err, encoded)
		}
		if !sameRecords(back, records) {
			t.Fatalf("%s round trip: %+v -> %s -> %+v", name, records, encoded, back)
		}
	}
}

// checkParseError checks what every refusal obeys.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, reconcile.ErrInvalidLabRecords) {
		t.Fatalf("error %v does not wrap ErrInvalidLabRecords", err)
	}
	var re *reconcile.RecordError
	if !errors.As(err, &re) || re.Index < -1 || re.Index > reconcile.MaxRecords {
		t.Fatalf("error %v: no record index in range", err)
	}
}
