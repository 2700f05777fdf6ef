package registry

import (
	"testing"

	"ramanserve/registry/store"
)

// TestCanonicalJSONIgnoresNilAgainstEmpty: one index, held once with nil
// lists and once with empty ones (as decoding it from the store gives),
// digests the same; a real change does not.
func TestCanonicalJSONIgnoresNilAgainstEmpty(t *testing.T) {
	a := &store.Index{Active: "v1", Models: map[string]*store.Entry{"v1": {Version: "v1"}}}
	b := &store.Index{Active: "v1", Models: map[string]*store.Entry{"v1": {Version: "v1"}}, Removing: []store.Removal{}}
	ja, err := canonicalJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := canonicalJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Fatalf("nil and empty lists digest apart:\n%s\n%s", ja, jb)
	}
	b.Active = "v2"
	if jc, _ := canonicalJSON(b); string(jc) == string(ja) {
		t.Fatal("another active version digests the same")
	}
}
