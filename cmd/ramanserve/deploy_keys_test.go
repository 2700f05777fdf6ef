package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"ramanserve/server/zmtp/curve"
)

// TestServiceCurveKeyAdviceStarts: the unit and docs/operations.md tell an
// operator how to put the CurveZMQ secret key where the service reads
// it; a key installed that way must be one the server accepts at start
// (a secret key group or others may read stops it), or the service
// fails and restarts in a loop.
func TestServiceCurveKeyAdviceStarts(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	// The comment paragraph that names the CURVE secret key.
	for _, para := range strings.Split(string(unit), "\n\n") {
		if strings.Contains(para, "CURVE secret key") && !strings.Contains(para, "0600") {
			t.Errorf("%s: the paragraph naming the CURVE secret key gives no mode 0600 for it (the server refuses a group-readable key):\n%s", unitFile, para)
		}
	}

	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	install := regexp.MustCompile(`(?m)^install -m (0[0-7]{3}) (.*)/etc/ramanserve/curve/server\.key\b.*$`)
	m := install.FindSubmatch(readme)
	if m == nil {
		t.Fatal("docs/operations.md: no `install -m MODE ... /etc/ramanserve/curve/server.key` line in 'Run it as a service' (the settings file points zmq-curve-secret-key there)")
	}
	if !strings.Contains(string(m[2]), "-o ramanserve") {
		t.Errorf("docs/operations.md: %q does not give the key to the service user, which alone may read it", m[0])
	}
	mode, _ := strconv.ParseUint(string(m[1]), 8, 32)
	_, secret, err := curve.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	z85, _ := curve.EncodeZ85(secret[:])
	p := filepath.Join(t.TempDir(), "server.key")
	if err := os.WriteFile(p, []byte(z85+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, os.FileMode(mode)); err != nil {
		t.Fatal(err)
	}
	if _, err := curve.ReadSecretKeyFile(p); err != nil {
		t.Errorf("docs/operations.md: a key installed with mode %s is refused at start: %v", m[1], err)
	}
}
