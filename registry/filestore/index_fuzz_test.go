package filestore

import (
	"errors"
	"path/filepath"
	"testing"

	"ramanserve/platform/atomicfile"
	"ramanserve/registry/store"
)

// FuzzParseIndex: whatever index.json holds, parseIndex does not panic,
// and an index it accepts names only model files inside models/, under
// keys that are valid versions, a shadow that is a valid version name, and survives a write and a read unchanged.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"format_version":1,"active":"","models":{}}`))
	f.Add([]byte(`{"format_version":1,"active":"x","models":null}`))
	f.Add([]byte(`{"format_version":1,"active":"a","models":{"a":{"version":"a","status":"active","file":"models/a.npz","size_bytes":7,"sha256":"00"}}}`))
	f.Add([]byte(`{"format_version":1,"active":"","models":{"a":{"version":"a","file":"models/../a.npz"}}}`))
	f.Add([]byte(`{"format_version":1,"models":{"a":null}}`))
	f.Add([]byte(`{"format_version":1,"models":{"a":{"version":"a","file":"models/.ramanserve-tmp-a.npz"}}}`))
	f.Add([]byte(`{"format_version":1,"active":"a","shadow":"b","models":{"a":{"version":"a","status":"active","file":"models/a.npz"},"b":{"version":"b","status":"staged","file":"models/b.npz"}}}`))
	f.Add([]byte(`{"format_version":1,"shadow":"../b","models":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := parseIndex(b)
		if err != nil {
			if !errors.Is(err, store.ErrIndexCorrupt) {
				t.Fatalf("error not ErrIndexCorrupt: %v", err)
			}
			return
		}
		if ix.Shadow != "" && !store.ValidVersion(ix.Shadow) {
			t.Fatalf("accepted shadow %q", ix.Shadow)
		}
		for k, e := range ix.Models {
			if e == nil || e.Version != k || !store.ValidVersion(k) || !store.ValidArtifactName(e.File) ||
				atomicfile.IsTempName(filepath.Base(e.File)) ||
				filepath.Dir(filepath.Clean(e.File)) != store.ModelsDir || !store.ValidStatus(e.Status) {
				t.Fatalf("accepted entry %q: %+v", k, e)
			}
		}
		out, err := encodeIndex(ix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseIndex(out); err != nil {
			t.Fatalf("a written index does not read back: %v\n%s", err, out)
		}
	})
}

func TestIndexShadowMustBeAVersionName(t *testing.T) {
	_, err := parseIndex([]byte(`{"format_version":1,"active":"","models":{},"shadow":"../x"}`))
	if !errors.Is(err, store.ErrIndexCorrupt) {
		t.Fatalf("parseIndex: %v", err)
	}
}
