package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ramanserve/api"
)

// testDirs are the packages whose tests departures.md may name, by the
// package name it writes.
var testDirs = map[string]string{
	"conformance": "../conformance",
	"zmtp":        "../server/zmtp",
}

var (
	departureHeading = regexp.MustCompile(`(?m)^### ([MP]\d+)\. (.+)$`)
	exercisedBy      = regexp.MustCompile("(?m)^- \\*\\*Exercised by\\*\\*: (.+)$")
	testReference    = regexp.MustCompile("`(\\w+)\\.(Test\\w+)` \\[`([^`]+)`\\]")
	// headerRow is the header of a departures table, which must live in
	// departures.md alone.
	headerRow = regexp.MustCompile(`(?m)^\s*\| Interface document \|`)
)

// TestDeparturesAreExercised keeps api/departures.md, the one list of
// the server's departures from the interface document on both channels,
// in step with the tests: every departure names at least one test, every
// test it names exists, and the test (or, for cases kept in a table
// beside it, the file it is in) still holds the case named beside it (a
// code, a scenario name, a field). The other documents point to
// the list rather than keep tables of their own.
func TestDeparturesAreExercised(t *testing.T) {
	text, err := os.ReadFile("departures.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := departureHeading.FindAllStringSubmatchIndex(string(text), -1)
	if len(sections) < 20 {
		t.Fatalf("departures.md has %d departures; the heading pattern no longer reads it", len(sections))
	}
	bodies := map[string]string{} // "pkg.TestName" -> its source
	var refs int
	for i, s := range sections {
		id := string(text[s[2]:s[3]])
		end := len(text)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		section := string(text[s[0]:end])
		line := exercisedBy.FindStringSubmatch(section)
		if line == nil {
			t.Errorf("%s: no **Exercised by** line", id)
			continue
		}
		found := testReference.FindAllStringSubmatch(line[1], -1)
		if len(found) == 0 {
			t.Errorf("%s: names no test as `pkg.TestName` [`case`]", id)
		}
		for _, r := range found {
			pkg, name, token := r[1], r[2], r[3]
			body, ok := bodies[pkg+"."+name]
			if !ok {
				body = testSource(t, pkg, name)
				bodies[pkg+"."+name] = body
			}
			refs++
			switch {
			case body == "":
				t.Errorf("%s: %s.%s does not exist", id, pkg, name)
			case !strings.Contains(body, token):
				t.Errorf("%s: %s.%s (and its file) no longer holds %q", id, pkg, name, token)
			}
		}
	}
	for _, doc := range []struct{ name, text string }{
		{"openapi.yaml", api.OpenAPIYAML()},
		{"messages.md", readFile(t, "messages.md")},
	} {
		if headerRow.MatchString(doc.text) {
			t.Errorf("%s keeps a departures table of its own; departures.md is the one list", doc.name)
		}
		if !strings.Contains(doc.text, "departures.md") {
			t.Errorf("%s does not point to departures.md", doc.name)
		}
	}
	t.Logf("departures: %d, exercised by %d cases in %d tests", len(sections), refs, len(bodies))
}

// testSource returns the source of the file holding the test function
// name in package pkg, "" when there is none.
func testSource(t *testing.T, pkg, name string) string {
	t.Helper()
	dir, ok := testDirs[pkg]
	if !ok {
		t.Errorf("departures.md names a test of package %q, which this test does not know", pkg)
		return ""
	}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	head := "\nfunc " + name + "(t *testing.T) {\n"
	for _, f := range files {
		src := readFile(t, f)
		if strings.Contains(src, head) {
			return src
		}
	}
	return ""
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
