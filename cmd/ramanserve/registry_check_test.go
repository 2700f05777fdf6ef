package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCheckArgs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		dir    string
		repair bool
		store  string
		err    bool
	}{
		{args: []string{"-store", "postgres://u@h/db"}, store: "postgres://u@h/db"},
		{args: []string{"-store", "postgres://u@h/db", "d"}, err: true},
		{args: []string{"-store", "postgres://u@h/db", "-repair"}, err: true},
		{args: []string{"d"}, dir: "d"},
		{args: []string{"d", "-repair"}, dir: "d", repair: true},
		{args: []string{"-repair", "d"}, dir: "d", repair: true},
		{args: []string{"--repair=false", "d"}, dir: "d"},
		{args: nil, err: true},
		{args: []string{"a", "b"}, err: true},
		{args: []string{"d", "-force"}, err: true},
	} {
		a, err := parseCheckArgs(tc.args)
		if (err != nil) != tc.err || a.dir != tc.dir || a.repair != tc.repair || a.storeURL != tc.store {
			t.Errorf("parseCheckArgs(%q) = %+v, %v", tc.args, a, err)
		}
	}
}

func TestRunRegistryExitStatus(t *testing.T) {
	clean := t.TempDir()
	damaged := t.TempDir()
	os.MkdirAll(filepath.Join(damaged, "models"), 0o755)
	os.WriteFile(filepath.Join(damaged, "models", "junk.npz"), []byte("not a model"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{args: nil, code: checkFailed, out: "usage: ramanserve registry check"},
		{args: []string{"fsck", clean}, code: checkFailed, out: "usage:"},
		{args: []string{"check", filepath.Join(clean, "missing")}, code: checkFailed, out: "no registry directory"},
		{args: []string{"check", clean}, code: checkClean, out: "no problems found"},
		{args: []string{"check", damaged}, code: checkProblems, out: "models/junk.npz: model file without an index entry"},
		// Repaired into quarantine, which stays for the operator.
		{args: []string{"check", damaged, "-repair"}, code: checkProblems, out: "quarantine/junk.npz: in quarantine"},
	} {
		var stdout, stderr bytes.Buffer
		code := runRegistry(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("registry %q: exit %d, want %d with %q\n%s%s", tc.args, code, tc.code, tc.out, stdout.String(), stderr.String())
		}
	}
}
