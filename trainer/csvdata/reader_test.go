package csvdata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"ramanserve/trainer"
	"ramanserve/trainer/membudget"
)

// smallOpts keeps the test CSVs readable: 3 intensity columns, so a row is
// scan_id, wn_0, wn_1, wn_2, EPA, DHA, DPA (columns 1..7).
var smallOpts = Options{Features: 3, MinRows: 2}

const smallHeader = "scan_id,wn_0,wn_1,wn_2,EPA_g_per_L,DHA_g_per_L,DPA_g_per_L\n"

func TestHeader(t *testing.T) {
	h := Header(trainer.NumWavenumbers)
	if len(h) != 2052 {
		t.Fatalf("len = %d, want 2052", len(h))
	}
	want := map[int]string{0: "scan_id", 1: "wn_0", 2048: "wn_2047", 2049: "EPA_g_per_L", 2050: "DHA_g_per_L", 2051: "DPA_g_per_L"}
	for i, name := range want {
		if h[i] != name {
			t.Errorf("h[%d] = %q, want %q", i, h[i], name)
		}
	}
}

func TestReadValid(t *testing.T) {
	in := "\xef\xbb\xbf" + smallHeader +
		"s1,1.5,-2,3e2,10,5,1\r\n" +
		"\"s,2\", 4 ,5,\"6\",20.5,7.25,0\n" +
		"s3,1e-400,0,0,0,0,0\n" + // underflow reads as 0
		"\n\n" // trailing empty lines are allowed
	ds, err := Read(context.Background(), strings.NewReader(in), smallOpts)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 3 || ds.Features() != 3 || ds.NumTargets() != 3 {
		t.Fatalf("shape n=%d p=%d q=%d, want 3,3,3", ds.Len(), ds.Features(), ds.NumTargets())
	}
	wantX := [][]float64{{1.5, -2, 300}, {4, 5, 6}, {0, 0, 0}}
	wantY := [][]float64{{10, 5, 1}, {20.5, 7.25, 0}, {0, 0, 0}}
	wantID := []string{"s1", "s,2", "s3"}
	for i := range wantX {
		if fmt.Sprint(ds.Row(i)) != fmt.Sprint(wantX[i]) || fmt.Sprint(ds.Labels(i)) != fmt.Sprint(wantY[i]) || ds.ScanID(i) != wantID[i] {
			t.Errorf("row %d = %q %v %v, want %q %v %v", i, ds.ScanID(i), ds.Row(i), ds.Labels(i), wantID[i], wantX[i], wantY[i])
		}
	}
}

func TestReadErrors(t *testing.T) {
	row := func(id string) string { return id + ",1,2,3,10,5,1\n" }
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantCol  int
		wantName string
		reason   string
	}{
		{"empty input", "", 1, 1, "scan_id", "empty input"},
		{"header wrong name", strings.Replace(smallHeader, "wn_1", "wn_x", 1) + row("a") + row("b"), 1, 3, "wn_1", `"wn_x", want "wn_1"`},
		{"header wrong order", "scan_id,wn_0,wn_1,wn_2,DHA_g_per_L,EPA_g_per_L,DPA_g_per_L\n" + row("a"), 1, 5, "EPA_g_per_L", `"DHA_g_per_L", want "EPA_g_per_L"`},
		{"header missing column", "scan_id,wn_0,wn_1,wn_2,EPA_g_per_L,DHA_g_per_L\n", 1, 7, "DPA_g_per_L", "missing"},
		{"header extra column", strings.TrimSuffix(smallHeader, "\n") + ",extra\n", 1, 8, "", "unexpected"},
		{"too few fields", smallHeader + row("a") + "b,1,2,3,10,5\n", 3, 7, "DPA_g_per_L", "6 fields, want 7"},
		{"too many fields", smallHeader + row("a") + "b,1,2,3,10,5,1,9\n", 3, 8, "", "8 fields, want 7"},
		{"non-numeric cell", smallHeader + row("a") + "b,1,abc,3,10,5,1\n", 3, 3, "wn_1", `"abc" is not a number`},
		{"hex number", smallHeader + "a,0x10,2,3,10,5,1\n", 2, 2, "wn_0", "not a decimal"},
		{"hex float", smallHeader + "a,1,-0x1p-2,3,10,5,1\n", 2, 3, "wn_1", "hexadecimal"},
		{"digit separator", smallHeader + row("a") + "b,1,1_000,3,10,5,1\n", 3, 3, "wn_1", "digit separators"},
		{"separator in exponent", smallHeader + "a,1,2,1e1_0,10,5,1\n", 2, 4, "wn_2", "digit separators"},
		{"separator in label", smallHeader + "a,1,2,3,1_0,5,1\n", 2, 5, "EPA_g_per_L", "digit separators"},
		{"leading separator", smallHeader + "a,_1,2,3,10,5,1\n", 2, 2, "wn_0", "digit separators"},
		{"inf", smallHeader + "a,inf,2,3,10,5,1\n", 2, 2, "wn_0", "NaN or Inf"},
		{"infinity", smallHeader + "a,1,Infinity,3,10,5,1\n", 2, 3, "wn_1", "NaN or Inf"},
		{"nan", smallHeader + "a,1,2,nan,10,5,1\n", 2, 4, "wn_2", "NaN or Inf"},
		{"lone dot", smallHeader + "a,.,2,3,10,5,1\n", 2, 2, "wn_0", "not a number"},
		{"exponent without digits", smallHeader + "a,1e,2,3,10,5,1\n", 2, 2, "wn_0", "not a number"},
		{"exponent sign only", smallHeader + "a,1e+,2,3,10,5,1\n", 2, 2, "wn_0", "not a number"},
		{"empty intensity", smallHeader + "a,1,,3,10,5,1\n", 2, 3, "wn_1", "empty cell"},
		{"NaN", smallHeader + row("a") + row("b") + "c,1,2,NaN,10,5,1\n", 4, 4, "wn_2", "NaN or Inf"},
		{"Inf", smallHeader + "a,-Inf,2,3,10,5,1\n", 2, 2, "wn_0", "NaN or Inf"},
		{"overflow", smallHeader + "a,1,2,3,1e999,5,1\n", 2, 5, "EPA_g_per_L", "overflows"},
		{"NaN label", smallHeader + "a,1,2,3,10,nan,1\n", 2, 6, "DHA_g_per_L", "NaN or Inf"},
		{"missing label", smallHeader + row("a") + "b,1,2,3,10,,1\n", 3, 6, "DHA_g_per_L", "missing label"},
		{"missing label quoted", smallHeader + "a,1,2,3,10,5,\"\"\n", 2, 7, "DPA_g_per_L", "missing label"},
		{"negative concentration", smallHeader + row("a") + "b,1,2,3,10,5,-0.1\n", 3, 7, "DPA_g_per_L", "negative concentration -0.1"},
		{"duplicate scan_id", smallHeader + row("a") + row("b") + row("a"), 4, 1, "scan_id", `duplicate scan_id "a" (first on line 2)`},
		{"empty scan_id", smallHeader + row(""), 2, 1, "scan_id", "empty scan_id"},
		{"unterminated quote", smallHeader + "\"a,1,2,3,10,5,1\n", 2, 1, "scan_id", "unterminated"},
		{"text after quote", smallHeader + "\"a\"x,1,2,3,10,5,1\n", 2, 1, "scan_id", "after a quoted field"},
		{"blank line inside", smallHeader + row("a") + "\n" + row("b"), 3, 1, "scan_id", "empty line"},
		{"too few rows", smallHeader + row("a"), 3, 1, "scan_id", "too few rows: 1 data rows, cross-validation needs at least 2"},
		{"header only", smallHeader, 2, 1, "scan_id", "too few rows: 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(context.Background(), strings.NewReader(tc.in), smallOpts)
			if !errors.Is(err, trainer.ErrInvalidCSV) {
				t.Fatalf("err = %v, want ErrInvalidCSV", err)
			}
			var ce *trainer.CSVError
			if !errors.As(err, &ce) {
				t.Fatalf("err %T is not a *CSVError", err)
			}
			if ce.Line != tc.wantLine || ce.Column != tc.wantCol || ce.ColumnName != tc.wantName {
				t.Errorf("at line %d column %d (%q), want line %d column %d (%q): %v", ce.Line, ce.Column, ce.ColumnName, tc.wantLine, tc.wantCol, tc.wantName, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q lacks %q", msg, tc.reason)
			}
			wantLoc := fmt.Sprintf("line %d", tc.wantLine)
			if tc.wantCol > 0 {
				wantLoc += fmt.Sprintf(", column %d", tc.wantCol)
			}
			if !strings.Contains(msg, wantLoc) {
				t.Errorf("message %q lacks %q", msg, wantLoc)
			}
		})
	}
}

// TestReadFullHeader checks the contract's 2048-column shape, including a
// bad cell at the far end of a long line.
func TestReadFullHeader(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(strings.Join(Header(trainer.NumWavenumbers), ",") + "\n")
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&buf, "scan%d", i)
		for j := 0; j < trainer.NumWavenumbers; j++ {
			fmt.Fprintf(&buf, ",%d.125", i+j)
		}
		buf.WriteString(",30,20,5\n")
	}
	good := buf.String()
	ds, err := Read(context.Background(), strings.NewReader(good), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 12 || ds.Row(11)[2047] != 11+2047+0.125 || ds.Labels(5)[2] != 5 {
		t.Fatalf("n=%d last=%v label=%v", ds.Len(), ds.Row(11)[2047], ds.Labels(5)[2])
	}
	bad := strings.Replace(good, ",2058.125,30", ",x,30", 1) // row scan11, wn_2047
	_, err = Read(context.Background(), strings.NewReader(bad), Options{})
	var ce *trainer.CSVError
	if !errors.As(err, &ce) || ce.Line != 13 || ce.Column != 2049 || ce.ColumnName != "wn_2047" {
		t.Fatalf("err = %v, want line 13 column 2049 (wn_2047)", err)
	}
	// Default MinRows is 12 for 10 folds: 11 rows fail.
	eleven := good[:strings.Index(good, "scan11,")]
	if _, err := Read(context.Background(), strings.NewReader(eleven), Options{}); !errors.Is(err, trainer.ErrInvalidCSV) || !strings.Contains(err.Error(), "at least 12") {
		t.Fatalf("11 rows: err = %v, want too few rows (12)", err)
	}
}

func TestReadLimits(t *testing.T) {
	in := smallHeader + "a,1,2,3,10,5,1\nb,1,2,3,10,5,1\nc,1,2,3,10,5,1\n"
	tests := []struct {
		name    string
		opt     Options
		wantErr error
	}{
		{"bytes over", Options{Features: 3, MinRows: 2, MaxBytes: int64(len(in) - 1)}, trainer.ErrCSVTooLarge},
		{"bytes exact", Options{Features: 3, MinRows: 2, MaxBytes: int64(len(in))}, nil},
		{"rows over", Options{Features: 3, MinRows: 2, MaxRows: 2}, trainer.ErrCSVTooLarge},
		{"rows exact", Options{Features: 3, MinRows: 2, MaxRows: 3}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Read(context.Background(), strings.NewReader(in), tc.opt)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && ds.Len() != 3 {
				t.Fatalf("n = %d, want 3", ds.Len())
			}
		})
	}
	// A line without newline longer than the cap is refused before it is
	// buffered whole.
	huge := smallHeader + "a," + strings.Repeat("1", 64<<10)
	_, err := Read(context.Background(), strings.NewReader(huge), smallOpts)
	var ce *trainer.CSVError
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Column != 2 || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v, want line 2, column 2 (the long cell) too long", err)
	}
}

func TestReadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Read(ctx, strings.NewReader(smallHeader+"a,1,2,3,10,5,1\n"), smallOpts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReadPassesReaderError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := Read(context.Background(), io.MultiReader(strings.NewReader(smallHeader+"a,1,"), failingReader{boom}), smallOpts)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

// TestReadChargesTheBudget: a charged read takes its memory from the
// budget block by block, in matrix bytes (a 1-character cell costs 8, not
// 2), and is refused with a MemoryBudgetError naming the budget as soon as
// the next block does not fit, long before the input ends.
func TestReadChargesTheBudget(t *testing.T) {
	const p = 2048
	perBlock := 128 * trainer.ChargePerRow(p, 3)
	budget := membudget.New(3*perBlock + perBlock/2) // room for 3 blocks
	var in bytes.Buffer
	in.WriteString(strings.Join(Header(p), ",") + "\n")
	cells := strings.Repeat("1,", p+2) + "1\n"
	rows := 0
	for ; rows < 1000; rows++ { // 1000 rows: 8 blocks
		fmt.Fprintf(&in, "s%d,%s", rows, cells)
	}
	counted := &countReads{r: bytes.NewReader(in.Bytes())}
	_, err := Read(context.Background(), counted, Options{Charger: budget})
	var mbe *trainer.MemoryBudgetError
	if !errors.As(err, &mbe) || !errors.Is(err, trainer.ErrCSVTooLarge) || !errors.Is(err, trainer.ErrMemoryBudget) {
		t.Fatalf("got %v, want a MemoryBudgetError", err)
	}
	if mbe.Rows != 3*128 || mbe.Limit != budget.Limit() || !strings.Contains(err.Error(), "-max-training-memory") {
		t.Fatalf("refused after %d rows (limit %d): %v", mbe.Rows, mbe.Limit, err)
	}
	if budget.Used() != mbe.Charged || budget.Used() < 3*perBlock {
		t.Fatalf("budget used %d, data set charged %d", budget.Used(), mbe.Charged)
	}
	// Refused while the input was still arriving: about 3 of 8 blocks read.
	if counted.n > int64(in.Len())/2 {
		t.Fatalf("read %d of %d bytes before refusing", counted.n, in.Len())
	}

	// Within the budget the data set reports what it charged.
	budget = membudget.New(1 << 30)
	ds, err := Read(context.Background(), bytes.NewReader(in.Bytes()), Options{Charger: budget})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Charged() != budget.Used() || ds.Charged() < ds.NumericBytes() {
		t.Fatalf("charged %d, budget used %d, matrix %d", ds.Charged(), budget.Used(), ds.NumericBytes())
	}
}

type countReads struct {
	r io.Reader
	n int64
}

func (c *countReads) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
