package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"ramanserve/platform/atomicfile"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.json")
	for _, content := range []string{"old", "new"} {
		if err := atomicfile.WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 so that the service's user can read a file root wrote", st.Mode().Perm())
	}
	des, _ := os.ReadDir(dir)
	if len(des) != 1 {
		t.Errorf("the folder holds %d files, want the target only", len(des))
	}
}

func TestWriteFileIntoMissingFolderFails(t *testing.T) {
	if err := atomicfile.WriteFile(filepath.Join(t.TempDir(), "none", "x"), []byte("x")); err == nil {
		t.Fatal("a write into a missing folder succeeded")
	}
}

func TestCreateTempIsNamedWithThePrefix(t *testing.T) {
	tmp, err := atomicfile.CreateTemp(filepath.Join(t.TempDir(), "model.npz"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if name := filepath.Base(tmp.Name()); !atomicfile.IsTempName(name) {
		t.Errorf("%s is not a temp name", name)
	}
	if atomicfile.IsTempName("model.npz") {
		t.Error("an ordinary name was taken for a temp name")
	}
}
