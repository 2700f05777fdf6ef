package storecopy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"ramanserve/app/storecopy"
	"ramanserve/evidence/batches"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/evidence/reconcile/labstoretest"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/pgtest"
	"ramanserve/registry"
	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
)

// logRecords is the size of the staged prediction log: more than two
// batches of the tests' LogBatch, so that a copy stops between batches.
const (
	logRecords = 2500
	logBatch   = 1000
)

// staged is what stageRegistry put in a registry directory.
type staged struct {
	artifacts map[string][]byte // by artifact name
	sidecars  map[string][]byte
	upload    []byte // the data set of the queued job "q"
}

// stageRegistry fills dir the way a server would have, through the
// embedded stores: three models (one .joblib with a sidecar), three jobs
// (one queued with its data set), logRecords prediction records (every
// third with a spectrum; five share one time across the first batch
// boundary) and lab results, matched and unmatched.
func stageRegistry(t *testing.T, dir string) staged {
	t.Helper()
	ctx := context.Background()
	s := staged{artifacts: map[string][]byte{}, sidecars: map[string][]byte{}, upload: []byte("scan_id,epa\n1,2\n")}
	stageModels(t, ctx, dir, &s)
	stageJobs(t, ctx, dir, s.upload)
	stageLog(t, ctx, dir)
	lab, err := labstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	var results []reconcile.LabResult
	for i := range 7 {
		results = append(results, labstoretest.Matched(fmt.Sprintf("L%d", i), i))
	}
	results = append(results, labstoretest.Unmatched("U1", "no_prediction"))
	if _, err := lab.Upsert(ctx, results); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"B1", "B2"} {
		if _, _, err := lab.References().Mark(ctx, batches.Reference{BatchID: id, MarkedAt: time.Date(2026, 2, 2, 0, 0, 0, 1, time.UTC), MarkedBy: "ann"}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func stageModels(t *testing.T, ctx context.Context, dir string, s *staged) {
	t.Helper()
	files, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	ix := store.NewIndex()
	for i, name := range []string{"models/a.npz", "models/b.npz", "models/c.joblib"} {
		content := bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
		if strings.HasSuffix(name, ".joblib") {
			s.sidecars[name] = []byte(`{"target": "DHA"}`)
			if err := files.PutSidecar(ctx, name, s.sidecars[name]); err != nil {
				t.Fatal(err)
			}
		}
		size, sum, err := files.Put(ctx, name, func(w io.Writer) error { _, err := w.Write(content); return err })
		if err != nil {
			t.Fatal(err)
		}
		s.artifacts[name] = content
		version := fmt.Sprintf("v%d", i+1)
		status := store.StatusArchived
		if i == 0 {
			status, ix.Active = store.StatusActive, version
		}
		ix.Models[version] = &store.Entry{Version: version, Status: status, File: name, SizeBytes: size, SHA256: sum,
			TrainedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), AddedAt: time.Date(2026, 1, 2, 3, 4, 5, 7, time.FixedZone("", 3600)),
			Annotations: json.RawMessage(`{"b":1,"a":[2]}`), SourceBatches: []string{"B1"}}
	}
	ix.Shadow = "v2"
	if _, err := files.CommitIndex(ctx, 0, ix); err != nil {
		t.Fatal(err)
	}
}

func stageJobs(t *testing.T, ctx context.Context, dir string, upload []byte) {
	t.Helper()
	jf, err := jobfiles.Open(filepath.Join(dir, "jobs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	done := at.Add(time.Minute)
	for _, j := range []*jobs.Job{
		{ID: "q", Kind: jobs.KindTraining, Status: jobs.Queued, Samples: 40, SubmittedAt: at, Meta: jobs.Meta{Operator: "ann"}},
		{ID: "d", Kind: jobs.KindTraining, Status: jobs.Done, Progress: 1, SubmittedAt: at, StartedAt: &at, FinishedAt: &done},
		{ID: "f", Kind: jobs.KindTraining, Status: jobs.Failed, SubmittedAt: at, Error: &jobs.Failure{Code: "CANCELLED", Message: "cancelled"}},
	} {
		if err := jf.Save(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := jf.Put(ctx, "q", bytes.NewReader(upload)); err != nil {
		t.Fatal(err)
	}
}

// stageLog appends logRecords records in a few Appends, out of time
// order, as a log with a shadow and a rescore would hold them.
func stageLog(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	log, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	recs := make([]*predlog.Record, logRecords)
	for i := range recs {
		recs[i] = predlogtest.Record(i, fmt.Sprintf("B%d", i%4), i%3 == 0)
		if i >= logBatch-2 && i <= logBatch+2 {
			recs[i].Time = recs[logBatch-2].Time // a tie across the first batch boundary
		}
		if i%5 == 1 {
			recs[i].Role, recs[i].PredictionID = predlog.RoleShadow, recs[i-1].PredictionID
		}
		if i%7 == 0 {
			recs[i].Contributions = predlogtest.Contributions(3, 2, true, i%2 == 0)
		}
	}
	// Appended backwards in chunks: IDs and times disagree.
	for end := len(recs); end > 0; end -= 700 {
		if err := log.Append(ctx, recs[max(0, end-700):end]); err != nil {
			t.Fatal(err)
		}
	}
}

// target opens a fresh database and the fleet's stores on it.
func target(t *testing.T) *storecopy.Stores {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.Database(t), pgdb.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	dst, err := storecopy.Fleet(pool)
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func openSource(t *testing.T, dir string) *storecopy.Embedded {
	t.Helper()
	src, err := storecopy.OpenEmbedded(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func TestCopyEverythingThenAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	want := stageRegistry(t, dir)
	dst := target(t)
	src := openSource(t, dir)

	var progress bytes.Buffer
	sum, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{Progress: &progress, LogBatch: logBatch})
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, progress.String())
	}
	t.Logf("first copy:\n%s%s", progress.String(), sum)
	if sum.Models.Copied != 3 || sum.Index != "committed" || sum.Jobs.Copied != 3 || sum.Uploads.Copied != 1 ||
		sum.LogRecords.Copied != logRecords || sum.LabResults.Copied != 7 || sum.References.Copied != 2 {
		t.Fatalf("first copy: %+v", sum)
	}
	if refs, err := dst.References.References(ctx); err != nil || len(refs) != 2 || refs[1].BatchID != "B2" || refs[1].MarkedBy != "ann" || refs[1].MarkedAt.Nanosecond() != 1 {
		t.Fatalf("reference batches in the target: %+v, %v", refs, err)
	}
	assertCopied(t, src, dst, want)
	rep, err := registry.CheckStores(ctx, "target", dst.Index, dst.Artifacts)
	if err != nil || len(rep.Findings) != 0 || rep.Models != 3 {
		t.Fatalf("check of the target: %v\n%s", err, rep)
	}

	again, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{LogBatch: logBatch})
	if err != nil {
		t.Fatal(err)
	}
	if again.Models.Copied != 0 || again.Models.Skipped != 3 || again.Index != "already the same" || again.Jobs.Copied != 0 ||
		again.Jobs.Skipped != 3 || again.LogRecords.Copied != 0 || again.LogResumedAfter.IsZero() || again.References.Skipped != 2 {
		t.Fatalf("second copy did something: %+v", again)
	}
	assertCopied(t, src, dst, want)
}

// cancelAfterAppend is a target log whose first Append cancels the
// copy's context once it has committed: a copy killed between batches.
type cancelAfterAppend struct {
	predlog.Store
	cancel context.CancelFunc
}

func (c *cancelAfterAppend) Append(ctx context.Context, recs []*predlog.Record) error {
	err := c.Store.Append(ctx, recs)
	c.cancel()
	return err
}

func TestInterruptedCopyResumes(t *testing.T) {
	dir := t.TempDir()
	want := stageRegistry(t, dir)
	dst := target(t)
	src := openSource(t, dir)

	// Stopped just before the five records of one time, then after two
	// of them, then after a third: each resume starts inside the tie.
	stops := []int{logBatch - 2, 2, 1}
	copied := 0
	for _, batch := range stops {
		ctx, cancel := context.WithCancel(context.Background())
		interrupted := *dst
		interrupted.Log = &cancelAfterAppend{Store: dst.Log, cancel: cancel}
		sum, err := storecopy.Copy(ctx, &src.Stores, &interrupted, storecopy.Options{LogBatch: batch})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted copy: %v", err)
		}
		if sum.LogRecords.Copied != int64(batch) {
			t.Fatalf("interrupted with batches of %d: %d records copied", batch, sum.LogRecords.Copied)
		}
		copied += batch
	}
	sum, err := storecopy.Copy(context.Background(), &src.Stores, dst, storecopy.Options{LogBatch: logBatch})
	if err != nil {
		t.Fatal(err)
	}
	if sum.LogResumedAfter.IsZero() || sum.LogRecords.Copied != int64(logRecords-copied) {
		t.Fatalf("resumed copy: %+v", sum)
	}
	assertCopied(t, src, dst, want)
}

func TestCorruptArtifactIsNotCopied(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stageRegistry(t, dir)
	// Same size, other bytes: only the checksum tells.
	if err := os.WriteFile(filepath.Join(dir, "models", "b.npz"), bytes.Repeat([]byte{'x'}, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := target(t)
	src := openSource(t, dir)
	sum, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{})
	if !errors.Is(err, store.ErrArtifactCorrupt) || !strings.Contains(err.Error(), "v2") {
		t.Fatalf("copy of a corrupt artifact: %v", err)
	}
	if _, rev, _ := dst.Index.ReadIndex(ctx); rev != 0 {
		t.Fatal("the index was committed without the corrupt model's artifact")
	}
	if names := artifactNames(t, dst.Artifacts); slices.Contains(names, "models/b.npz") || len(names) != 2 {
		t.Fatalf("target artifacts: %v", names)
	}
	// The other kinds went ahead.
	if sum.LogRecords.Copied != logRecords || sum.Jobs.Copied != 3 {
		t.Fatalf("summary: %+v", sum)
	}
}

func TestAnotherIndexIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stageRegistry(t, dir)
	dst := target(t)
	other := store.NewIndex()
	other.Models["x"] = &store.Entry{Version: "x", Status: store.StatusStaged, File: "models/x.npz"}
	if _, err := dst.Index.CommitIndex(ctx, 0, other); err != nil {
		t.Fatal(err)
	}
	src := openSource(t, dir)
	if _, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrIndexDiffers) {
		t.Fatalf("copy onto another index: %v", err)
	}
}

func TestLogWrittenByAnotherIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stageRegistry(t, dir)
	dst := target(t)
	if err := dst.Log.Append(ctx, []*predlog.Record{predlogtest.Record(logRecords+10, "X", false)}); err != nil {
		t.Fatal(err)
	}
	src := openSource(t, dir)
	if _, err := storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrLogDiverged) {
		t.Fatalf("copy into a log written by another: %v", err)
	}
}

func TestSourceInUse(t *testing.T) {
	dir := t.TempDir()
	files, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	if _, err := storecopy.OpenEmbedded(context.Background(), dir); !errors.Is(err, storecopy.ErrServerRunning) {
		t.Fatalf("open a held registry: %v", err)
	}
}

// assertCopied checks, through the target's stores, that it holds what
// the source holds: every model checked by size and SHA-256, the index,
// the jobs and the queued job's data set, every log record with its
// fields and spectrum, once, and the matched lab results.
func assertCopied(t *testing.T, src *storecopy.Embedded, dst *storecopy.Stores, want staged) {
	t.Helper()
	ctx := context.Background()
	srcIx, _, err := src.Index.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dstIx, _, err := dst.Index.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := encodeJSON(t, srcIx), encodeJSON(t, dstIx); a != b {
		t.Fatalf("index:\n%s\nwant\n%s", b, a)
	}
	for _, e := range dstIx.Models {
		a, err := dst.Artifacts.Open(ctx, e.File, store.Fingerprint{SizeBytes: e.SizeBytes, SHA256: e.SHA256}, 0)
		if err != nil {
			t.Fatalf("model %s in the target: %v", e.Version, err)
		}
		sum := sha256.Sum256(want.artifacts[e.File])
		if a.SHA256() != hex.EncodeToString(sum[:]) {
			t.Fatalf("model %s: sha256 %s", e.Version, a.SHA256())
		}
		a.Close()
		if side, ok := want.sidecars[e.File]; ok {
			if got, err := dst.Artifacts.ReadSidecar(ctx, e.File); err != nil || !bytes.Equal(got, side) {
				t.Fatalf("sidecar of %s: %q %v", e.File, got, err)
			}
		}
	}
	if names := artifactNames(t, dst.Artifacts); len(names) != len(want.artifacts) {
		t.Fatalf("target artifacts: %v", names)
	}
	assertJobs(t, src, dst, want.upload)
	assertLog(t, src.Log, dst.Log)
	assertLab(t, src.Lab, dst.Lab)
}

func assertJobs(t *testing.T, src *storecopy.Embedded, dst *storecopy.Stores, upload []byte) {
	t.Helper()
	ctx := context.Background()
	encodeAll := func(s jobs.Store) []string {
		recs, skipped, err := s.LoadAll(ctx)
		if err != nil || len(skipped) > 0 {
			t.Fatal(err, skipped)
		}
		var out []string
		for _, j := range recs {
			out = append(out, encodeJSON(t, j))
		}
		slices.Sort(out)
		return out
	}
	if a, b := encodeAll(src.Jobs), encodeAll(dst.Jobs); !slices.Equal(a, b) {
		t.Fatalf("jobs:\n%q\nwant\n%q", b, a)
	}
	rc, _, err := dst.Uploads.Open(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, upload) {
		t.Fatalf("data set of q: %q %v", got, err)
	}
}

func assertLog(t *testing.T, src, dst predlog.Store) {
	t.Helper()
	for _, withSpectra := range []bool{false, true} {
		a, b := allRecords(t, src, withSpectra), allRecords(t, dst, withSpectra)
		if len(a) != len(b) {
			t.Fatalf("log (spectra %v): %d records in the target, %d in the source", withSpectra, len(b), len(a))
		}
		for i := range a {
			a[i].ID, b[i].ID = 0, 0
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Fatalf("log record %d (spectra %v):\n%+v\nwant\n%+v", i, withSpectra, b[i], a[i])
			}
		}
	}
}

func allRecords(t *testing.T, s predlog.Store, withSpectra bool) []predlog.Record {
	t.Helper()
	var out []predlog.Record
	f := predlog.Filter{WithSpectra: withSpectra, WithContributions: true}
	for {
		page, err := s.Page(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		f.Cursor = page.Next
	}
}

func assertLab(t *testing.T, src, dst reconcile.LabStore) {
	t.Helper()
	describe := func(s reconcile.LabStore) []string {
		rs, err := s.Range(context.Background(), time.Time{}, time.Time{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s %s %d/%v %s %v %v %v %s", r.LabSampleID, r.BatchID, r.ScanSeq, r.HasScanSeq,
				r.SampledAt.Format(time.RFC3339Nano), r.Lab, r.PredictionID, r.SpectrumTime.UnixNano(), r.Reason))
		}
		return out
	}
	if a, b := describe(src), describe(dst); !slices.Equal(a, b) || len(a) != 7 {
		t.Fatalf("lab results:\n%q\nwant\n%q", b, a)
	}
}

func artifactNames(t *testing.T, s store.ArtifactStore) []string {
	t.Helper()
	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	return names
}

func encodeJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
