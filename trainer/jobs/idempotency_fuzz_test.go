package jobs

import "testing"

// FuzzValidKey: ValidKey accepts exactly 1 to MaxKeyBytes bytes of
// printable ASCII without space, whatever the input.
func FuzzValidKey(f *testing.F) {
	for _, seed := range []string{"a", "4f1c2d7e-9a0b-4c1d-8e2f-000000000000", "has space", "", "é", "\x7f", string(make([]byte, 256))} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, k string) {
		want := len(k) >= 1 && len(k) <= MaxKeyBytes
		for _, r := range []byte(k) {
			if r <= ' ' || r >= 0x7f {
				want = false
			}
		}
		if got := ValidKey(k); got != want {
			t.Fatalf("ValidKey(%q) = %v, want %v", k, got, want)
		}
	})
}
