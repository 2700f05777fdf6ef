package ctxio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReaderStopsWithItsContext: the bytes pass while ctx lives, and the
// next read after it ended fails with ctx's error.
func TestReaderStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, strings.NewReader("abcdef"))
	buf := make([]byte, 3)
	if n, err := r.Read(buf); n != 3 || err != nil || string(buf) != "abc" {
		t.Fatalf("read %d %q %v", n, buf[:n], err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
}
