package inference_test

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"ramanserve/inference"
)

func TestCutContextText(t *testing.T) {
	short := []byte("B-2026-1122-03")
	if got := inference.CutContextText(short); !bytes.Equal(got, short) {
		t.Errorf("a short id was changed: %q", got)
	}
	long := bytes.Repeat([]byte("x"), 1<<20)
	if got := inference.CutContextText(long); len(got) != inference.MaxContextTextBytes {
		t.Errorf("a 1 MiB id kept %d bytes", len(got))
	}
	// A two-byte character across the bound is dropped whole.
	mixed := append(bytes.Repeat([]byte("a"), inference.MaxContextTextBytes-1), []byte("éé")...)
	got := inference.CutContextText(mixed)
	if len(got) != inference.MaxContextTextBytes-1 || !utf8.Valid(got) {
		t.Errorf("cut to %d bytes, valid UTF-8 %v", len(got), utf8.Valid(got))
	}
}
