package registry

import (
	"context"
	"io"
	"ramanserve/registry/filestore"
	"strings"
	"testing"
	"time"
)

// TestIndexNeverOutgrowsWhatStartUpReads: start-up reads at most
// filestore.MaxIndexBytes of index.json and refuses a larger one as corrupt, so the
// registry must never write one: the change that would cross the bound
// fails, the index on disk stays as it was, and the registry still opens.
// (Each trained version's entry carries its upload's free text, up to
// 1 MiB of meta, so a few dozen jobs could otherwise get there.)
func TestIndexNeverOutgrowsWhatStartUpReads(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	stage := func(notes string) error {
		_, _, err := r.AddStaged(context.Background(), StagedModel{
			Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS", Notes: notes,
			Write: func(_ string, w io.Writer) error { _, err := w.Write([]byte("model")); return err },
		})
		return err
	}
	if err := stage("small"); err != nil {
		t.Fatal(err)
	}
	if err := stage(strings.Repeat("n", filestore.MaxIndexBytes)); err == nil {
		t.Fatal("an entry that makes index.json larger than start-up reads was recorded")
	}
	if _, list := r.List(); len(list) != 1 {
		t.Errorf("%d versions listed after the refused one, want 1", len(list))
	}
	r = reopen(t, r, nil)
	if _, list := r.List(); len(list) != 1 {
		t.Errorf("after a restart %d versions, want 1", len(list))
	}
}
