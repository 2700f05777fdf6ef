package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureLinksNameTheCode: every link of docs/architecture.md
// that names a function, method or type in a Go file ([`Server.admit`](../server/zmtp/server.go))
// points at a file that declares it, so the request paths it follows
// function by function stay true as the code moves.
func TestArchitectureLinksNameTheCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile("\\[`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`\\]\\((\\.\\./[^)#]+\\.go)\\)")
	links := link.FindAllStringSubmatch(string(doc), -1)
	if len(links) < 50 {
		t.Fatalf("found %d links to Go declarations in docs/architecture.md; the pattern no longer matches its links", len(links))
	}
	files := map[string]string{}
	for _, l := range links {
		name, path := l[1], filepath.Join("..", "docs", filepath.FromSlash(l[2]))
		src, ok := files[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("[%s](%s): %v", name, l[2], err)
				continue
			}
			src = string(b)
			files[path] = src
		}
		if !declares(src, name) {
			t.Errorf("[%s](%s): the file declares no %s", name, l[2], name)
		}
	}
}

// declares reports whether Go source src declares name: a function, a
// type, a variable or a constant, or with "Type.method" a method of Type
// (of an interface Type, one of its methods).
func declares(src, name string) bool {
	var pattern string
	if typ, method, ok := strings.Cut(name, "."); ok {
		if strings.Contains(src, "type "+typ+" interface {") {
			return regexp.MustCompile(`(?m)^\t` + method + `\(`).MatchString(src)
		}
		pattern = `(?m)^func \(\w+ \*?` + typ + `(\[[^\]]*\])?\) ` + method + `[\[(]`
	} else {
		pattern = `(?m)^(func ` + name + `[\[(]|type ` + name + `\b|\t` + name + `\s+(=|\w|\*|\[|func)|(var|const) ` + name + `\b)`
	}
	return regexp.MustCompile(pattern).MatchString(src)
}
