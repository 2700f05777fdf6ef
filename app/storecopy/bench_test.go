package storecopy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"ramanserve/app/storecopy"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
)

// TestStoreCopyFigure is the figure: the copy of a registry with
// 20 models, 1,000 jobs and 1,000,000 log rows (every tenth with a
// 64-point spectrum), its time, and the result verified. It takes
// minutes, so it runs only with RAMAN_BENCH_STORE_COPY=1.
func TestStoreCopyFigure(t *testing.T) {
	if os.Getenv("RAMAN_BENCH_STORE_COPY") == "" {
		t.Skip("set RAMAN_BENCH_STORE_COPY=1 for the store copy figure")
	}
	const models, jobCount, rows = 20, 1000, 1_000_000
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now()
	stageFigure(t, ctx, dir, models, jobCount, rows)
	t.Logf("staged %d models, %d jobs, %d log rows in %v", models, jobCount, rows, time.Since(start))

	dst := target(t)
	src := openSource(t, dir)
	sum, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("store copy:\n%s", sum)
	if sum.Models.Copied != models || sum.Jobs.Copied != jobCount || sum.LogRecords.Copied != rows {
		t.Fatalf("summary: %+v", sum)
	}
	verify := time.Now()
	for _, withSpectra := range []bool{false, true} {
		if n := sameLogs(t, src.Log, dst.Log, withSpectra); withSpectra && n != rows/10 || !withSpectra && n != rows {
			t.Fatalf("%d records compared (spectra %v)", n, withSpectra)
		}
	}
	again, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{})
	if err != nil || again.LogRecords.Copied != 0 || again.Models.Copied != 0 || again.Jobs.Copied != 0 {
		t.Fatalf("copy again: %+v %v", again, err)
	}
	t.Logf("verified (every log record and spectrum compared, copy again copied nothing) in %v", time.Since(verify))
}

func stageFigure(t *testing.T, ctx context.Context, dir string, models, jobCount, rows int) {
	files, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix := store.NewIndex()
	for i := range models {
		name := fmt.Sprintf("models/m%02d.npz", i)
		content := bytes.Repeat([]byte{byte(i)}, 256<<10)
		size, sum, err := files.Put(ctx, name, func(w io.Writer) error { _, err := w.Write(content); return err })
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("m%02d", i)
		ix.Models[v] = &store.Entry{Version: v, Status: store.StatusArchived, File: name, SizeBytes: size, SHA256: sum}
	}
	if _, err := files.CommitIndex(ctx, 0, ix); err != nil {
		t.Fatal(err)
	}
	files.Close()
	jf, err := jobfiles.Open(filepath.Join(dir, "jobs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := range jobCount {
		if err := jf.Save(ctx, &jobs.Job{ID: fmt.Sprintf("j%04d", i), Kind: jobs.KindTraining, Status: jobs.Done, SubmittedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	log, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	const chunk = 10_000
	batch := make([]*predlog.Record, 0, chunk)
	for i := range rows {
		batch = append(batch, predlogtest.Record(i, fmt.Sprintf("B%d", i%50), i%10 == 0))
		if len(batch) == chunk || i == rows-1 {
			if err := log.Append(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// sameLogs compares two logs page by page, every field but the ID, and
// returns how many records it compared.
func sameLogs(t *testing.T, src, dst predlog.Store, withSpectra bool) int {
	t.Helper()
	ctx := context.Background()
	fa, fb := predlog.Filter{WithSpectra: withSpectra}, predlog.Filter{WithSpectra: withSpectra}
	var a, b []predlog.Record
	n := 0
	for {
		if len(a) == 0 && (n == 0 || fa.Cursor != "") {
			page, err := src.Page(ctx, fa)
			if err != nil {
				t.Fatal(err)
			}
			a, fa.Cursor = page.Records, page.Next
		}
		if len(b) == 0 && (n == 0 || fb.Cursor != "") {
			page, err := dst.Page(ctx, fb)
			if err != nil {
				t.Fatal(err)
			}
			b, fb.Cursor = page.Records, page.Next
		}
		if len(a) == 0 || len(b) == 0 {
			if len(a) != len(b) {
				t.Fatalf("after %d records, one log ends (source %d left, target %d)", n, len(a), len(b))
			}
			return n
		}
		k := min(len(a), len(b))
		for i := range k {
			a[i].ID, b[i].ID = 0, 0
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Fatalf("record %d differs:\n%+v\nwant\n%+v", n+i, b[i], a[i])
			}
		}
		a, b, n = a[k:], b[k:], n+k
	}
}
