package jobs

import (
	"errors"
	"testing"
)

// FuzzDecodeCursor: any string either decodes to a position that encodes
// back to the same cursor, or fails with ErrInvalidCursor; it never
// panics.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(position{T: 1767225600000000000, ID: "5f0c9a52-7d4c-4b4e-9d0e-3f1d2e6b7a80"}))
	f.Add(encodeCursor(position{T: -1, ID: "x"}))
	f.Add("")
	f.Add("AXsidCI6MSwiaWQiOiJ4In0")
	f.Add("AXsidCI6MSwiaWQiOiJ4In0gIA")
	f.Add("AXsidCI6MWUzMDAsImlkIjoieCJ9")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("decodeCursor(%q): %v, not ErrInvalidCursor", s, err)
			}
			return
		}
		if p.ID == "" || len(p.ID) > maxCursorID || len(s) > maxCursorBytes {
			t.Fatalf("decodeCursor(%q) accepted %+v", s, p)
		}
		again, err := decodeCursor(encodeCursor(p))
		if err != nil || again != p {
			t.Fatalf("round trip of %+v: %+v %v", p, again, err)
		}
	})
}
