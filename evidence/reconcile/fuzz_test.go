package reconcile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"ramanserve/evidence/reconcile"
)

// FuzzParseJSON: any input is refused with a *RecordError wrapping
// ErrInvalidLabRecords, or parses to records that obey every rule and
// come back unchanged through both formats.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`[{"batch_id":"B-17","scan_seq":1042,"EPA":181.5,"DHA":92,"lab_sample_id":"HPLC-2291"}]`,
		`[{"batch_id":"B","sampled_at":"2026-11-23T09:15:00.25+01:00","DPA":20.1,"EPA":null,"lab_sample_id":"S"}]`,
		`[{"batch_id":"B","scan_seq":0,"EPA":0,"lab_sample_id":"a"},{"batch_id":"B","scan_seq":9007199254740992,"EPA":1e6,"lab_sample_id":"b"}]`,
		`[{"batch_id":"B","scan_seq":1,"EPA":-0,"lab_sample_id":"S"}]`,
		`[{"batch_id":"B","scan_seq":1,"EPA":1e-320,"lab_sample_id":"S"}]`,
		`[{"batch_id":"\u00e9\u0301","scan_seq":1,"EPA":1,"lab_sample_id":"\ud83d\ude00"}]`,
		`[{"batch_id":"B","batch_id":"B","scan_seq":1,"EPA":1,"lab_sample_id":"S"}]`,
		`[1,2]`, `[`, `[]`, ` [ ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		records, err := reconcile.ParseJSON(bytes.NewReader(in))
		checkStreamed(t, reconcile.ParseJSON, in, records, err)
		if err != nil {
			checkParseError(t, err)
			return
		}
		checkParsed(t, records)
	})
}

// FuzzParseCSV: as FuzzParseJSON, for the CSV format.
func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"batch_id,scan_seq,sampled_at,EPA,DHA,DPA,lab_sample_id\nB-17,1042,,181.5,92,,HPLC-2291\n",
		"\uFEFFlab_sample_id,batch_id,sampled_at,DPA\r\nS,B,2026-11-23T08:15:00Z,20.1\r\n",
		"batch_id,scan_seq,EPA,lab_sample_id\n\"B,1\",1,1,\"S\"\"x\"\n",
		"batch_id,scan_seq,EPA,lab_sample_id\nB,1,1e-5,S\nB,2,1E+2,T\n",
		"batch_id,scan_seq,EPA,lab_sample_id\n\"B\nC\",1,1,S\n",
		"batch_id,scan_seq,EPA,lab_sample_id\nB,1,-0,S\n",
		"batch_id,scan_seq,EPA,lab_sample_id\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		records, err := reconcile.ParseCSV(bytes.NewReader(in))
		checkStreamed(t, reconcile.ParseCSV, in, records, err)
		if err != nil {
			checkParseError(t, err)
			if errors.Is(err, reconcile.ErrMalformedJSON) || errors.Is(err, reconcile.ErrJSONSchema) {
				t.Fatalf("a CSV refusal wraps a JSON error: %v", err)
			}
			return
		}
		checkParsed(t, records)
	})
}

// checkStreamed parses in again, one byte per read, and checks that the
// outcome is the same as from one read: where the reads of a body are cut
// changes nothing.
func checkStreamed(t *testing.T, parse func(io.Reader) ([]reconcile.LabRecord, error), in []byte, records []reconcile.LabRecord, err error) {
	t.Helper()
	again, errAgain := parse(iotest.OneByteReader(bytes.NewReader(in)))
	if fmt.Sprint(err) != fmt.Sprint(errAgain) || !sameRecords(records, again) {
		t.Fatalf("one read: %+v, %v\none byte per read: %+v, %v", records, err, again, errAgain)
	}
}
