package registry

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/sklearn"
)

// smallParams is a 4-feature, one-target model.
func smallParams() *inference.PLSParams {
	return &inference.PLSParams{
		Meta:      inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: []float64{500, 600, 700, 800}},
		Targets:   []inference.Analyte{inference.DHA},
		XMean:     []float64{1, 2, 3, 4},
		XScale:    []float64{1, 1, 1, 1},
		Coef:      mat.NewDense(4, 1, []float64{0.5, -0.25, 0.125, 2}),
		Intercept: []float64{7},
	}
}

func TestReadParamsReadsAStagedArtifactWithoutActivating(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v, _, err := r.AddStaged(context.Background(), StagedModel{
		Ext: ".npz", TrainedAt: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), Algorithm: "PLS2-NIPALS",
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, smallParams()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.ReadParams(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	if p.Meta.Version != v || p.Coef.At(3, 0) != 2 || len(p.Meta.Wavenumbers) != 4 || p.Targets[0] != inference.DHA {
		t.Fatalf("read back %+v", p.Meta)
	}
	if r.Active() != nil {
		t.Fatal("reading the parameters activated the model")
	}
	if e, _ := r.Describe(v); e.Status != StatusStaged {
		t.Fatalf("status %s after reading", e.Status)
	}

	// Unknown versions are not found; a changed file is corrupted.
	if _, err := r.ReadParams(context.Background(), "nope"); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
	e, _ := r.Describe(v)
	full := filepath.Join(dir, filepath.FromSlash(e.File))
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(full, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadParams(context.Background(), v); !errors.Is(err, inference.ErrModelCorrupted) {
		t.Fatalf("changed file: %v", err)
	}
	// A symbolic link in its place is never followed.
	other := filepath.Join(t.TempDir(), "other.npz")
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(full)
	if err := os.Symlink(other, full); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadParams(context.Background(), v); !errors.Is(err, inference.ErrModelCorrupted) {
		t.Fatalf("symlink: %v", err)
	}
}

func TestReadParamsOfADeletedVersionIsNotFound(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	v, _, err := r.AddStaged(context.Background(), StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, smallParams()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadParams(context.Background(), v); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("deleted version: %v", err)
	}
}

// An imported scikit-learn file is read through the restricted reader,
// as a load reads it: no review, the file's own coefficients.
func TestReadParamsReadsAnImportedJoblib(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "inference", "sklearn", "testdata", "plain_scaled.joblib"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{
		".joblib": func(ctx context.Context, content *io.SectionReader, e Entry) (inference.Model, error) {
			p, _, err := sklearn.Load(ctx, content, sklearn.Options{Target: e.Target})
			if err != nil {
				return nil, err
			}
			p.Meta.Version = e.Version
			return inference.NewPLSModel(p, inference.ModelOptions{})
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	imp := filepath.Join(dir, "import", "m.joblib")
	if err := os.WriteFile(imp, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(context.Background(), LoadRequest{Version: "imported-1", Source: SourceFile, Path: imp}); err != nil {
		t.Fatal(err)
	}
	p, err := r.ReadParams(context.Background(), "imported-1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Review != nil || len(p.Targets) != 3 || len(p.XMean) != 64 || p.Meta.Version != "imported-1" {
		t.Fatalf("read back: %d targets, %d features, review %v, version %q", len(p.Targets), len(p.XMean), p.Review != nil, p.Meta.Version)
	}
}
