package predlog

import (
	"errors"
	"testing"
	"unicode/utf8"

	"ramanserve/inference"
)

// FuzzBatchCursor: any text either decodes to a batch id that encodes
// back to the same text, or is ErrBadCursor; the id is non-empty UTF-8
// within the bound of a batch id.
func FuzzBatchCursor(f *testing.F) {
	for _, id := range []string{"B", "B-2026-11-23", "T 1/x", "é", string(make([]byte, inference.MaxContextTextBytes))} {
		f.Add(EncodeBatchCursor(id))
	}
	for _, text := range []string{"", "Yg", "YgA=", "Yv_-", "YmM"} {
		f.Add(text)
	}
	if n := len(EncodeBatchCursor(string(make([]byte, inference.MaxContextTextBytes)))); n != MaxBatchCursorLen {
		f.Fatalf("the longest cursor has %d characters, MaxBatchCursorLen %d", n, MaxBatchCursorLen)
	}
	f.Fuzz(func(t *testing.T, text string) {
		id, err := DecodeBatchCursor(text)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("%q: %v, want ErrBadCursor", text, err)
			}
			return
		}
		if id == "" || len(id) > inference.MaxContextTextBytes || !utf8.ValidString(id) {
			t.Fatalf("%q decodes to %q", text, id)
		}
		if again := EncodeBatchCursor(id); again != text || len(again) > MaxBatchCursorLen {
			t.Fatalf("%q decodes to %q, which encodes to %q", text, id, again)
		}
	})
}
