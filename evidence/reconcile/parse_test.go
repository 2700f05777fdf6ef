package reconcile_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode"

	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

func TestParseJSONAndCSVAgree(t *testing.T) {
	js := `[
	  {"batch_id": "B-17", "scan_seq": 1042, "EPA": 181.5, "DHA": 92, "lab_sample_id": "HPLC-2291"},
	  {"batch_id": "B-17", "sampled_at": "2026-11-23T09:15:00.25+01:00", "DPA": 20.1, "lab_sample_id": "HPLC-2292"}
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
// the field named, and wraps ErrMalformedJSON when it is not JSON,
// ErrJSONSchema when a value breaks the post's schema (the API contract's
// LabResult), neither when it breaks a rule past the schema.
func TestParseRefuses(t *testing.T) {
	const ok = `{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S0"}`
	malformed, schema := reconcile.ErrMalformedJSON, reconcile.ErrJSONSchema
	record := func(fields string) string { return `[{"lab_sample_id":"S",` + fields + `}]` }
	for _, tc := range []struct {
		name, json string
		index      int
		field      string
		class      error // nil: a rule past the schema
	}{
		{"empty body", ``, -1, "", malformed},
		{"white space only", " \n", -1, "", malformed},
		{"not JSON", `[{"batch_id":"B",}]`, 0, "", malformed},
		{"truncated", `[` + ok + `,{"batch_id":`, 1, "", malformed},
		{"unclosed array", `[` + ok, -1, "", malformed},
		{"trailing content", `[` + ok + `] []`, -1, "", malformed},
		{"trailing garbage", `[` + ok + `] x`, -1, "", malformed},
		{"not an array", `{"batch_id":"B"}`, -1, "", schema},
		{"a string", `"B"`, -1, "", schema},
		{"empty array", `[]`, -1, "", nil},
		{"unknown field", `[` + ok + `,{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S1","HPA":2}]`, 1, "HPA", schema},
		{"key twice", `[{"batch_id":"B","batch_id":"C","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`, 0, "batch_id", nil},
		{"null", record(`"batch_id":"B","scan_seq":1,"EPA":null,"DHA":1`), 0, "EPA", schema},
		{"null id", record(`"batch_id":null,"scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"true", record(`"batch_id":"B","scan_seq":true,"EPA":1`), 0, "scan_seq", schema},
		{"nested object", record(`"batch_id":{"id":"B"},"scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"array value", record(`"batch_id":"B","scan_seq":1,"EPA":[1]`), 0, "EPA", schema},
		{"negative", record(`"batch_id":"B","scan_seq":1,"EPA":-0.5`), 0, "EPA", schema},
		{"beyond float64", record(`"batch_id":"B","scan_seq":1,"DHA":1e400`), 0, "DHA", schema},
		{"over MaxConcentration", record(`"batch_id":"B","scan_seq":1,"DPA":1e7`), 0, "DPA", nil},
		{"number as string", record(`"batch_id":"B","scan_seq":1,"EPA":"1.5"`), 0, "EPA", schema},
		{"id as number", record(`"batch_id":7,"scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"scan_seq fraction", record(`"batch_id":"B","scan_seq":1.5,"EPA":1`), 0, "scan_seq", schema},
		{"scan_seq negative", record(`"batch_id":"B","scan_seq":-1,"EPA":1`), 0, "scan_seq", schema},
		{"scan_seq beyond int64", record(`"batch_id":"B","scan_seq":9223372036854775808,"EPA":1`), 0, "scan_seq", schema},
		{"scan_seq over 2^53", record(`"batch_id":"B","scan_seq":9007199254740993,"EPA":1`), 0, "scan_seq", nil},
		{"scan_seq not in digits", record(`"batch_id":"B","scan_seq":1.0,"EPA":1`), 0, "scan_seq", nil},
		{"scan_seq exponent", record(`"batch_id":"B","scan_seq":1e3,"EPA":1`), 0, "scan_seq", nil},
		{"sampled_at without zone", record(`"batch_id":"B","sampled_at":"2026-11-23T08:15:00","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at one-digit hour", record(`"batch_id":"B","sampled_at":"2026-11-23T8:15:00Z","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at comma", record(`"batch_id":"B","sampled_at":"2026-11-23T08:15:00,5Z","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at lower-case t", record(`"batch_id":"B","sampled_at":"2026-11-23t08:15:00Z","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at zone 24:00", record(`"batch_id":"B","sampled_at":"2026-11-23T08:15:00+24:00","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at 30 February", record(`"batch_id":"B","sampled_at":"2026-02-30T08:15:00Z","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at empty fraction", record(`"batch_id":"B","sampled_at":"2026-11-23T08:15:00.Z","EPA":1`), 0, "sampled_at", schema},
		{"sampled_at before 1970", record(`"batch_id":"B","sampled_at":"0001-01-01T00:00:00Z","EPA":1`), 0, "sampled_at", nil},
		{"no analyte", record(`"batch_id":"B","scan_seq":1`), 0, "", nil},
		{"neither seq nor time", record(`"batch_id":"B","EPA":1`), 0, "", nil},
		{"no lab_sample_id", `[{"batch_id":"B","scan_seq":1,"EPA":1}]`, 0, "lab_sample_id", schema},
		{"no batch_id", record(`"scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"duplicate lab_sample_id", `[` + ok + `,` + ok + `]`, 1, "lab_sample_id", nil},
		{"empty id", record(`"batch_id":"","scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"id over MaxIDBytes characters", record(`"batch_id":"` + strings.Repeat("b", reconcile.MaxIDBytes+1) + `","scan_seq":1,"EPA":1`), 0, "batch_id", schema},
		{"id over MaxIDBytes bytes only", record(`"batch_id":"` + strings.Repeat("é", reconcile.MaxIDBytes/2+1) + `","scan_seq":1,"EPA":1`), 0, "batch_id", nil},
		{"control character", record(`"batch_id":"B\u0007","scan_seq":1,"EPA":1`), 0, "batch_id", nil},
		{"surrounding space", record(`"batch_id":"B ","scan_seq":1,"EPA":1`), 0, "batch_id", nil},
		{"not an object", `[` + ok + `,3]`, 1, "", schema},
		{"invalid UTF-8", "[{\"batch_id\":\"B\xff\",\"scan_seq\":1,\"EPA\":1,\"lab_sample_id\":\"S\"}]", -1, "", nil},
		{"a character cut at the end", "[{\"batch_id\":\"B\",\"scan_seq\":1,\"EPA\":1,\"lab_sample_id\":\"S\"}]\xe2\x82", -1, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time as well: a character cut between two
			// reads must be judged whole.
			for _, r := range []io.Reader{strings.NewReader(tc.json), iotest.OneByteReader(strings.NewReader(tc.json))} {
				_, err := reconcile.ParseJSON(r)
				checkRecordError(t, err, tc.index, tc.field)
				checkClass(t, err, tc.class)
			}
		})
	}
}

// checkClass checks that err wraps class, and no other of the classes.
func checkClass(t *testing.T, err, class error) {
	t.Helper()
	for _, c := range []error{reconcile.ErrMalformedJSON, reconcile.ErrJSONSchema, reconcile.ErrTooLarge} {
		if errors.Is(err, c) != (c == class) {
			t.Errorf("error %q: wraps %v: %v, want %v", err, c, errors.Is(err, c), c == class)
		}
	}
}

// TestParseStreamsUTF8: characters of every length, cut anywhere between
// reads, come through whole.
func TestParseStreamsUTF8(t *testing.T) {
	id := "é€😀x"
	post := `[{"batch_id":"` + id + `","scan_seq":1,"EPA":1,"lab_sample_id":"` + id + `"}]`
	for _, r := range []io.Reader{iotest.OneByteReader(strings.NewReader(post)), iotest.HalfReader(strings.NewReader(post)), iotest.DataErrReader(strings.NewReader(post))} {
		records, err := reconcile.ParseJSON(r)
		if err != nil || len(records) != 1 || records[0].BatchID != id || records[0].LabSampleID != id {
			t.Fatalf("%+v, %v", records, err)
		}
	}
}

// TestParseReadError: an error reading the body is returned, wrapped, and
// is no refusal of the post.
func TestParseReadError(t *testing.T) {
	cut := errors.New("connection reset")
	for name, parse := range map[string]func(io.Reader) ([]reconcile.LabRecord, error){"JSON": reconcile.ParseJSON, "CSV": reconcile.ParseCSV} {
		body := io.MultiReader(strings.NewReader("[{\"batch_id\":\"B\",\"scan_seq\":1,"), iotest.ErrReader(cut))
		if name == "CSV" {
			body = io.MultiReader(strings.NewReader("batch_id,scan_seq,EPA,lab_sample_id\nB,1,"), iotest.ErrReader(cut))
		}
		_, err := parse(body)
		if !errors.Is(err, cut) || errors.Is(err, reconcile.ErrInvalidLabRecords) {
			t.Errorf("%s: %v", name, err)
		}
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
		{"negative", header + "B,1,-1,S\n", 0, "EPA"},
		{"sampled_at one-digit hour", "batch_id,sampled_at,EPA,lab_sample_id\nB,2026-11-23T8:15:00Z,1,S\n", 0, "sampled_at"},
		{"invalid UTF-8", header + "B\xff,1,1,S\n", -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.csv), iotest.OneByteReader(strings.NewReader(tc.csv))} {
				_, err := reconcile.ParseCSV(r)
				checkRecordError(t, err, tc.index, tc.field)
				checkClass(t, err, nil) // CSV has no schema past the rules
			}
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

	checkClass(t, err, nil)

	var json strings.Builder
	json.WriteString("[")
	for i := range reconcile.MaxRecords + 1 {
		json.WriteString(`{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S` + strconv.Itoa(i) + `"},`)
	}
	_, err = reconcile.ParseJSON(strings.NewReader(strings.TrimSuffix(json.String(), ",") + "]"))
	checkRecordError(t, err, reconcile.MaxRecords, "")
	checkClass(t, err, reconcile.ErrJSONSchema)

	// One byte past the limit is refused; at the limit is taken.
	atLimit := `[{"batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S"}`
	atLimit += strings.Repeat(" ", reconcile.MaxInputBytes-len(atLimit)-1) + "]"
	if _, err := reconcile.ParseJSON(strings.NewReader(atLimit)); err != nil {
		t.Fatalf("a post of exactly MaxInputBytes: %v", err)
	}
	_, err = reconcile.ParseJSON(strings.NewReader(atLimit + " "))
	checkRecordError(t, err, -1, "")
	checkClass(t, err, reconcile.ErrTooLarge)
	csvBig := "batch_id,scan_seq,EPA,lab_sample_id\nB,1,1,S" + strings.Repeat(" ", reconcile.MaxInputBytes) + "\n"
	_, err = reconcile.ParseCSV(strings.NewReader(csvBig))
	checkRecordError(t, err, -1, "")
	checkClass(t, err, reconcile.ErrTooLarge)
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

// checkParseError checks what every refusal obeys: it is a refusal of
// the post, with a record index in range, and of one kind at most.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, reconcile.ErrInvalidLabRecords) {
		t.Fatalf("error %v does not wrap ErrInvalidLabRecords", err)
	}
	kinds := 0
	for _, k := range []error{reconcile.ErrMalformedJSON, reconcile.ErrJSONSchema, reconcile.ErrTooLarge} {
		if errors.Is(err, k) {
			kinds++
		}
	}
	if kinds > 1 {
		t.Fatalf("error %v is of %d kinds", err, kinds)
	}
	var re *reconcile.RecordError
	if !errors.As(err, &re) || re.Index < -1 || re.Index > reconcile.MaxRecords {
		t.Fatalf("error %v: no record index in range", err)
	}
}
