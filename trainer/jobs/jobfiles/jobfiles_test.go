package jobfiles_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ramanserve/platform/atomicfile"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/jobs/jobstoretest"
)

func openDir(t *testing.T, dir string) *jobfiles.Dir {
	t.Helper()
	d, err := jobfiles.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestStoreContract(t *testing.T) {
	jobstoretest.RunStore(t, func(t *testing.T) func(t *testing.T) jobs.Store {
		dir := t.TempDir()
		return func(t *testing.T) jobs.Store { return openDir(t, dir) }
	})
}

func TestUploadSpoolContract(t *testing.T) {
	jobstoretest.RunUploadSpool(t, func(t *testing.T) func(t *testing.T) jobs.UploadSpool {
		dir := t.TempDir()
		return func(t *testing.T) jobs.UploadSpool { return openDir(t, dir) }
	})
}

// TestOpenSweepsOnlyOurTempFiles: the temp files a crash left are removed;
// an operator's files, and a folder or a link that only looks like a temp
// file, stay.
func TestOpenSweepsOnlyOurTempFiles(t *testing.T) {
	dir := t.TempDir()
	temp := filepath.Join(dir, atomicfile.TempPrefix+"x.json.123")
	os.WriteFile(temp, []byte("{"), 0o644)
	keep := []string{"README.txt", "notes.json.bak"}
	for _, name := range keep {
		os.WriteFile(filepath.Join(dir, name), []byte("operator's"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, atomicfile.TempPrefix+"dir"), 0o755)
	os.Symlink(filepath.Join(dir, "README.txt"), filepath.Join(dir, atomicfile.TempPrefix+"link"))
	keep = append(keep, atomicfile.TempPrefix+"dir", atomicfile.TempPrefix+"link")
	openDir(t, dir)
	if _, err := os.Lstat(temp); !os.IsNotExist(err) {
		t.Errorf("the temp file of an interrupted write is still there: %v", err)
	}
	for _, name := range keep {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}

// TestIDsStayInTheFolder: an id that is not a plain file name is refused
// by every call, and nothing is written outside the folder.
func TestIDsStayInTheFolder(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "jobs")
	d := openDir(t, dir)
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "../escape", "a/b", `a\b`, "a\x00b", atomicfile.TempPrefix + "x"} {
		if err := d.Save(ctx, &jobs.Job{ID: id}); err == nil {
			t.Errorf("Save %q succeeded", id)
		}
		if err := d.Put(ctx, id, bytes.NewReader([]byte("x"))); err == nil {
			t.Errorf("Put %q succeeded", id)
		}
		if rc, _, err := d.Open(ctx, id); err == nil {
			rc.Close()
			t.Errorf("Open %q succeeded", id)
		}
		if err := d.Remove(ctx, id); err == nil {
			t.Errorf("Remove %q succeeded", id)
		}
	}
	if des, _ := os.ReadDir(parent); len(des) != 1 {
		t.Errorf("files beside the jobs folder: %v", des)
	}
	if des, _ := os.ReadDir(dir); len(des) != 0 {
		t.Errorf("files in the jobs folder: %v", des)
	}
}

// TestLoadAllSkipsWhatIsNotARecord: broken, oversized, misnamed and
// special files under a record's name are reported as skipped; the good
// record beside them loads, without blocking on a FIFO.
func TestLoadAllSkipsWhatIsNotARecord(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	ctx := context.Background()
	if err := d.Save(ctx, &jobs.Job{ID: "good", Status: jobs.Done}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"job_id":"good"}`), 0o644)
	big, _ := os.Create(filepath.Join(dir, "big.json"))
	big.Truncate(17 << 20)
	big.Close()
	os.Symlink(filepath.Join(dir, "good.json"), filepath.Join(dir, "link.json"))
	os.Mkdir(filepath.Join(dir, "folder.json"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := d.LoadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != "good" {
		t.Fatalf("records %v, want the good one only", recs)
	}
	var names []string
	for _, e := range skipped {
		names = append(names, strings.SplitN(e.Error(), ":", 2)[0])
	}
	if got := strings.Join(names, " "); got != "big.json broken.json fifo.json folder.json link.json other.json" {
		t.Errorf("skipped %q", got)
	}
}

// TestSpoolIsPrivate: a saved data set is the customer's training data,
// readable by the service's user only.
func TestSpoolIsPrivate(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	if err := d.Put(context.Background(), "a", bytes.NewReader([]byte("data"))); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "a.dataset"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestKeyStoreContract(t *testing.T) {
	jobstoretest.RunKeyStore(t, func(t *testing.T) func(t *testing.T) jobs.KeyStore {
		dir := t.TempDir()
		return func(t *testing.T) jobs.KeyStore { return openDir(t, dir) }
	})
}
