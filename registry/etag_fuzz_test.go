package registry

import (
	"strings"
	"testing"
)

// FuzzMatchETag: any If-Match or If-None-Match value is read without
// panicking, and matches exactly when one of its comma-separated
// elements, trimmed, is the tag or "*"; a tag always matches itself.
func FuzzMatchETag(f *testing.F) {
	for _, seed := range [][2]string{
		{`"abc"`, `"abc"`},
		{`W/"abc"`, `"abc"`},
		{`"x", "abc"`, `"abc"`},
		{`*`, `"abc"`},
		{``, `"abc"`},
		{`,,, ,`, `""`},
		{"\"abc\"\x00", `"abc"`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, header, tag string) {
		got := MatchETag(header, tag)
		want := false
		for _, el := range strings.Split(header, ",") {
			el = strings.TrimSpace(el)
			if el == "*" || (el != "" && el == tag) {
				want = true
			}
		}
		if got != want {
			t.Fatalf("MatchETag(%q, %q) = %v, want %v", header, tag, got, want)
		}
		if tag != "" && !strings.Contains(tag, ",") && strings.TrimSpace(tag) == tag && !MatchETag(tag, tag) {
			t.Fatalf("the tag %q does not match itself", tag)
		}
	})
}
