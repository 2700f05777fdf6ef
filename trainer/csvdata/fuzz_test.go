package csvdata

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"ramanserve/trainer"
)

// FuzzCSVReader checks that Read never panics, that every rejection is a
// located CSVError (or the size limit), and that every accepted input
// yields a data set that obeys the contract and survives a write/read
// round trip unchanged.
func FuzzCSVReader(f *testing.F) {
	f.Add([]byte(smallHeader + "a,1,2,3,10,5,1\nb,4,5,6,20,7,0\n"))
	f.Add([]byte(smallHeader + "\"a\"\"x\",1,2,3,10,5,1\r\nb, 4 ,5,6,20,7,0\n\n"))
	f.Add([]byte(smallHeader + "a,1,2,NaN,10,5,1\n"))
	f.Add([]byte(smallHeader + "a,1,2,3,10,5,-1\n"))
	f.Add([]byte(smallHeader + "a,1,2,3,10,,1\nb,1\n"))
	f.Add([]byte("\xef\xbb\xbf" + smallHeader + "a,1e308,2e-320,3,10,5,1\na,1,2,3,4,5,6\n"))
	f.Add([]byte(smallHeader + "a,1_000,2,3,10,5,1\nb,1e1_0,5,6,20,7,0\n"))
	f.Add([]byte(smallHeader + "a,0x1p-2,inf,nan,infinity,5,1\nb,.5,5.,-.5e+1,20,7,0\n"))
	f.Add([]byte(smallHeader + "a,1e,+,-.,1E+,5,1\nb,_1,1_,1._5,20,7,0\n"))
	opt := Options{Features: 3, MinRows: 2, MaxBytes: 1 << 20, MaxRows: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := Read(context.Background(), bytes.NewReader(data), opt)
		if err != nil {
			var ce *trainer.CSVError
			switch {
			case errors.As(err, &ce):
				if ce.Line < 1 || ce.Column < 0 || !errors.Is(err, trainer.ErrInvalidCSV) {
					t.Fatalf("bad location in %v", err)
				}
				// A named column is the header's column at that position
				// (columns past the header, e.g. a stray quoted field in
				// column 9, carry no name).
				header := Header(3)
				if ce.ColumnName != "" && (ce.Column > len(header) || header[ce.Column-1] != ce.ColumnName) {
					t.Fatalf("column %d named %q in %v", ce.Column, ce.ColumnName, err)
				}
			case errors.Is(err, trainer.ErrCSVTooLarge):
			default:
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if ds.Len() < opt.MinRows {
			t.Fatalf("accepted %d rows, below MinRows", ds.Len())
		}
		seen := map[string]bool{}
		var out strings.Builder
		out.WriteString(smallHeader)
		for i := 0; i < ds.Len(); i++ {
			id := ds.ScanID(i)
			if id == "" || seen[id] {
				t.Fatalf("row %d: empty or duplicate id %q", i, id)
			}
			seen[id] = true
			out.WriteString(`"` + strings.ReplaceAll(id, `"`, `""`) + `"`)
			for _, v := range ds.Row(i) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("row %d: non-finite %v", i, v)
				}
				out.WriteString("," + strconv.FormatFloat(v, 'g', -1, 64))
			}
			for _, v := range ds.Labels(i) {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("row %d: bad label %v", i, v)
				}
				out.WriteString("," + strconv.FormatFloat(v, 'g', -1, 64))
			}
			out.WriteString("\n")
		}
		again, err := Read(context.Background(), strings.NewReader(out.String()), Options{Features: 3, MinRows: 2})
		if err != nil {
			t.Fatalf("round trip rejected: %v\n%s", err, out.String())
		}
		for i := 0; i < ds.Len(); i++ {
			if again.ScanID(i) != ds.ScanID(i) {
				t.Fatalf("row %d id %q != %q", i, again.ScanID(i), ds.ScanID(i))
			}
			a, b := again.Row(i), ds.Row(i)
			for j := range a {
				if a[j] != b[j] && !(a[j] == 0 && b[j] == 0) {
					t.Fatalf("row %d col %d: %v != %v", i, j, a[j], b[j])
				}
			}
		}
	})
}
