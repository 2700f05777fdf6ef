package predlog_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
)

// TestContributionsRoundTrip: what EncodeContributions writes,
// DecodeContributions reads back as it was, and its length is
// ContributionsBytes.
func TestContributionsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		top, regions int
		t2, q        bool
	}{{10, 2, true, true}, {0, 1, true, false}, {predlog.MaxStoredEntries, predlog.MaxStoredEntries, true, true}, {3, 0, false, true}} {
		want := predlogtest.Contributions(c.top, c.regions, c.t2, c.q)
		blob := predlog.EncodeContributions(nil, want)
		if len(blob) != predlog.ContributionsBytes(want) || len(blob) > predlog.MaxContributionsBytes {
			t.Fatalf("%+v: %d bytes, ContributionsBytes %d, at most %d", c, len(blob), predlog.ContributionsBytes(want), predlog.MaxContributionsBytes)
		}
		got, err := predlog.DecodeContributions(blob)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: got %+v, want %+v", c, got, want)
		}
	}
	if blob := predlog.EncodeContributions(nil, nil); len(blob) != 0 {
		t.Fatalf("nil contributions encode as %d bytes", len(blob))
	}
	if c, err := predlog.DecodeContributions(nil); c != nil || err != nil {
		t.Fatalf("an empty blob reads %v, %v", c, err)
	}
}

// TestContributionsRefusesDamage: a blob cut short, with a byte more,
// of an unknown version or with a count past the bound is refused.
func TestContributionsRefusesDamage(t *testing.T) {
	good := predlog.EncodeContributions(nil, predlogtest.Contributions(2, 1, true, true))
	for name, blob := range map[string][]byte{
		"cut short":      good[:len(good)-1],
		"a byte more":    append(bytes.Clone(good), 0),
		"version 2":      append([]byte{2}, good[1:]...),
		"no summary":     {1, 0},
		"unknown flag":   {1, 4},
		"count past 64":  append([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 65}, make([]byte, 65*16+1)...),
		"count too long": {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0},
		"NaN total":      {1, 1, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 0, 0},
	} {
		if c, err := predlog.DecodeContributions(blob); !errors.Is(err, predlog.ErrBadContributions) || c != nil {
			t.Errorf("%s: %v, %v; want ErrBadContributions", name, c, err)
		}
	}
}

// FuzzDecodeContributions: no blob crashes the reader or makes it
// allocate past its bound, and what it accepts encodes back to itself.
func FuzzDecodeContributions(f *testing.F) {
	f.Add(predlog.EncodeContributions(nil, predlogtest.Contributions(3, 2, true, true)))
	f.Add(predlog.EncodeContributions(nil, predlogtest.Contributions(0, 1, false, true)))
	f.Add([]byte{1, 3})
	f.Fuzz(func(t *testing.T, blob []byte) {
		c, err := predlog.DecodeContributions(blob)
		if err != nil {
			if !errors.Is(err, predlog.ErrBadContributions) {
				t.Fatalf("error %v is not ErrBadContributions", err)
			}
			return
		}
		if c == nil {
			if len(blob) != 0 {
				t.Fatal("a non-empty blob read as nothing")
			}
			return
		}
		if again := predlog.EncodeContributions(nil, c); !bytes.Equal(again, blob) {
			t.Fatalf("accepted %x, which encodes back as %x", blob, again)
		}
	})
}
