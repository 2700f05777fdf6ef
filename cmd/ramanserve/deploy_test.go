package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	unitFile    = "../../deploy/ramanserve.service"
	exampleFile = "../../deploy/ramanserve.yaml"
)

// flagNames are the names of every flag parseConfig defines, from its
// usage text.
func flagNames(t testing.TB) map[string]bool {
	t.Helper()
	var usage bytes.Buffer
	if _, _, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1) {
		names[m[1]] = true
	}
	if len(names) < 20 {
		t.Fatalf("only %d flags found in the usage:\n%s", len(names), usage.String())
	}
	return names
}

// exampleLine is one key of the example configuration file, set or
// commented.
type exampleLine struct {
	line      int
	name      string
	commented bool
}

// readExampleFile reads the keys of deploy/ramanserve.yaml: each line is a
// comment, blank, or "[#]name: value".
func readExampleFile(t *testing.T) []exampleLine {
	t.Helper()
	f, err := os.Open(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := regexp.MustCompile(`^(#?)([a-z0-9-]+): \S`)
	var lines []exampleLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if m := key.FindStringSubmatch(text); m != nil {
			lines = append(lines, exampleLine{line: n, name: m[2], commented: m[1] == "#"})
			continue
		}
		if text != "" && !strings.HasPrefix(text, "#") {
			t.Errorf("%s:%d: neither a comment nor name: value: %q", exampleFile, n, text)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestExampleFileCoversEveryFlag: deploy/ramanserve.yaml has a line, set
// or commented, for every flag but -config, names no key the server does
// not read, and what it sets parses.
func TestExampleFileCoversEveryFlag(t *testing.T) {
	flags := flagNames(t)
	delete(flags, configFlag)
	seen := map[string]bool{}
	for _, l := range readExampleFile(t) {
		if seen[l.name] {
			t.Errorf("%s:%d: %s appears twice", exampleFile, l.line, l.name)
		}
		seen[l.name] = true
		if !flags[l.name] {
			t.Errorf("%s:%d: %s is no flag", exampleFile, l.line, l.name)
		}
	}
	for f := range flags {
		if !seen[f] {
			t.Errorf("%s has no line for -%s", exampleFile, f)
		}
	}
	if _, _, err := parseConfig([]string{"-config", exampleFile}, func(string) string { return "" }, &bytes.Buffer{}); err != nil {
		t.Errorf("the settings of %s do not parse: %v", exampleFile, err)
	}
}

// unitSetting is the last value of key= in the unit file.
func unitSetting(t *testing.T, unit, key string) string {
	t.Helper()
	var value string
	found := false
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			value, found = v, true
		}
	}
	if !found {
		t.Fatalf("%s has no %s=", unitFile, key)
	}
	return value
}

// TestUnitStopsAfterTheGrace: systemd's stop timeout is above the
// shutdown grace the example settings file sets, so a graceful shutdown is
// never cut by SIGKILL; SIGHUP reloads and SIGTERM stops.
func TestUnitStopsAfterTheGrace(t *testing.T) {
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	stop, err := time.ParseDuration(unitSetting(t, unit, "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v (write it with a unit, e.g. 30s)", err)
	}
	_, opts, err := parseConfig([]string{"-config", exampleFile}, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.grace+5*time.Second > stop {
		t.Errorf("TimeoutStopSec %v leaves less than 5 s above the shutdown grace %v", stop, opts.grace)
	}
	for key, want := range map[string]string{
		"KillSignal": "SIGTERM", "ExecReload": "/bin/kill -HUP $MAINPID", "Restart": "on-failure",
		"ExecStart":       "/usr/local/bin/ramanserve -config /etc/ramanserve/ramanserve.yaml",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "User": "ramanserve",
	} {
		if got := unitSetting(t, unit, key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
}

// verifyUnit runs systemd-analyze verify on unit, written as
// ramanserve.service in a temporary directory with ExecStart pointing at
// an executable that exists (verify checks it), and returns what it
// printed and whether it exited 0.
func verifyUnit(t *testing.T, tool, unit string) (string, bool) {
	t.Helper()
	exe, err := os.Executable() // this test binary: it exists and is executable
	if err != nil {
		t.Fatal(err)
	}
	unit = strings.Replace(unit, "\nExecStart=/usr/local/bin/ramanserve ", "\nExecStart="+exe+" ", 1)
	path := filepath.Join(t.TempDir(), "ramanserve.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// TestUnitVerifies: systemd-analyze verify accepts deploy/ramanserve.service
// without a word, and refuses or warns about broken copies of it, so the
// check can fail. Skipped where systemd-analyze is not installed.
func TestUnitVerifies(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("systemd-analyze not installed: %v", err)
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	if out, ok := verifyUnit(t, tool, unit); !ok || out != "" {
		t.Fatalf("systemd-analyze verify %s: ok=%v\n%s", unitFile, ok, out)
	}
	for _, broken := range []struct{ name, old, new, says string }{
		{"a bad value", "\nProtectSystem=strict\n", "\nProtectSystem=strictest\n", "strictest"},
		{"a misspelt key", "\nNoNewPrivileges=yes\n", "\nNoNewPrivilege=yes\n", "NoNewPrivilege"},
		{"a binary that does not exist", "\nExecStart=/usr/local/bin/ramanserve ", "\nExecStart=/nonexistent/ramanserve ", "/nonexistent/ramanserve"},
	} {
		if !strings.Contains(unit, broken.old) {
			t.Fatalf("%s: the unit has no %q", broken.name, strings.TrimSpace(broken.old))
		}
		out, ok := verifyUnit(t, tool, strings.Replace(unit, broken.old, broken.new, 1))
		if (ok && out == "") || !strings.Contains(out, broken.says) {
			t.Errorf("a copy with %s passed verify: ok=%v %q", broken.name, ok, out)
		}
	}
}

// securityScore runs systemd-analyze security --offline=yes on unit,
// written as ramanserve.service in a temporary directory, and returns its
// overall exposure level (0 is the best, 10 the worst).
func securityScore(t *testing.T, tool, unit string) float64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ramanserve.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, "security", "--offline=yes", "--no-pager", path)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for ramanserve\.service: ([0-9]+\.[0-9])`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v, no exposure level in:\n%s", err, out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return score
}

// documentedScore is the exposure level the README states for the unit,
// which docs/operations.md repeats.
func documentedScore(t *testing.T) float64 {
	t.Helper()
	var scores []string
	for _, doc := range []string{"../../README.md", "../../docs/operations.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile("`systemd-analyze security` (?:exposure|rates its exposure) ([0-9]+\\.[0-9])").FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s states no `systemd-analyze security` exposure", doc)
		}
		scores = append(scores, string(m[1]))
	}
	if scores[0] != scores[1] {
		t.Fatalf("the README states exposure %s, docs/operations.md %s", scores[0], scores[1])
	}
	score, err := strconv.ParseFloat(scores[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return score
}

// TestUnitSecurityScore: systemd-analyze security rates the unit no worse
// than the README says, and rates a copy without its hardening worse, so
// the check can fail. Skipped where systemd-analyze is not installed
// unless RAMANSERVE_TEST_SYSTEMD is set (make test-systemd installs it).
func TestUnitSecurityScore(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("RAMANSERVE_TEST_SYSTEMD") != "" {
			t.Fatalf("systemd-analyze not installed: %v", err)
		}
		t.Skipf("systemd-analyze not installed: %v", err)
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	documented := documentedScore(t)
	measured := securityScore(t, tool, unit)
	t.Logf("systemd-analyze security --offline=yes: exposure %.1f (documented %.1f)", measured, documented)
	if measured > documented {
		t.Fatalf("the unit's exposure rose to %.1f, above the %.1f the README states: restore the hardening, or document the new score", measured, documented)
	}
	weakened := strings.Replace(unit, "\nNoNewPrivileges=yes\n", "\n", 1)
	weakened = strings.Replace(weakened, "\nProtectSystem=strict\n", "\n", 1)
	if weakened == unit {
		t.Fatal("the unit has neither NoNewPrivileges=yes nor ProtectSystem=strict to remove")
	}
	if w := securityScore(t, tool, weakened); w <= documented {
		t.Fatalf("a copy without NoNewPrivileges and ProtectSystem rates %.1f, not above the documented %.1f: the check cannot fail", w, documented)
	}
}
