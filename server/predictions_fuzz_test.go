package server

import (
	"context"
	"strings"
	"testing"
)

// FuzzWantsCSV: any Accept header is read without panicking, and CSV is
// chosen only when the header names text/csv.
func FuzzWantsCSV(f *testing.F) {
	for _, seed := range []string{"", "text/csv", "application/json", "text/csv;q=0.5, application/json", "application/json;q=0.1, text/csv",
		"*/*", "text/csv;q=0", "text/csv;q=abc", "text/csv;;", ",,,", "text/csv, */*;q=0.9", "TEXT/CSV"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		ctx := context.WithValue(context.Background(), exchangeKey{}, &exchange{accept: accept})
		if wantsCSV(ctx) && !strings.Contains(strings.ToLower(accept), "text/csv") {
			t.Fatalf("CSV chosen for %q", accept)
		}
	})
}

// TestWantsCSV: CSV when text/csv is preferred, or as good and first.
func TestWantsCSV(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                 false,
		"text/csv":                         true,
		"TEXT/CSV":                         true,
		"application/json":                 false,
		"text/csv, application/json":       true,
		"application/json, text/csv":       false,
		"text/csv;q=0.5, application/json": false,
		"application/json;q=0.1, text/csv": true,
		"text/csv;q=0":                     false,
		"*/*":                              false,
		"text/csv, */*;q=0.9":              true,
		"text/csv;q=0.9, */*":              false,
	} {
		ctx := context.WithValue(context.Background(), exchangeKey{}, &exchange{accept: accept})
		if got := wantsCSV(ctx); got != want {
			t.Errorf("Accept %q: CSV %v, want %v", accept, got, want)
		}
	}
}
