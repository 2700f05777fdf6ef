package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"ramanserve/platform/pgtest"
	"ramanserve/registry/filestore"
)

func TestRunStoreRefusals(t *testing.T) {
	held := t.TempDir()
	files, err := filestore.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	for _, tc := range []struct {
		args []string
		out  string
	}{
		{args: nil, out: "usage: ramanserve store copy"},
		{args: []string{"copy", "-from", t.TempDir()}, out: "usage:"},
		{args: []string{"copy", "-from", t.TempDir(), "-to", "postgres://u:secret@localhost/db"}, out: "holds a password"},
		{args: []string{"copy", "-from", held, "-to", "postgres://u@localhost/db"}, out: "stop the server first"},
	} {
		var stderr bytes.Buffer
		if code := runStore(context.Background(), tc.args, &stderr); code != copyUsage || !strings.Contains(stderr.String(), tc.out) {
			t.Errorf("store %q: exit %d, want %d with %q\n%s", tc.args, code, copyUsage, tc.out, stderr.String())
		}
		if strings.Contains(stderr.String(), "secret") {
			t.Errorf("store %q: the password is repeated: %s", tc.args, stderr.String())
		}
	}
}

// An empty registry copies into a fresh database, twice.
func TestRunStoreCopiesEmptyRegistry(t *testing.T) {
	url := pgtest.Database(t)
	dir := t.TempDir()
	for range 2 {
		var stderr bytes.Buffer
		if code := runStore(context.Background(), []string{"copy", "-from", dir, "-to", url}, &stderr); code != copyDone ||
			!strings.Contains(stderr.String(), "prediction records: 0 copied") {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runRegistry(context.Background(), []string{"check", "-store", url}, &stdout, &stderr); code != checkClean ||
		!strings.Contains(stdout.String(), "no problems found") {
		t.Fatalf("registry check -store: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
