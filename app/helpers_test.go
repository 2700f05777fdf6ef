package app

import (
	"context"
	"io"
	"ramanserve/inference"
	"ramanserve/registry"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// stageSmallModel stages a one-component model of six points in reg,
// declared by operator, and returns its version.
func stageSmallModel(t *testing.T, reg *registry.Registry, operator string) string {
	t.Helper()
	axis := []float64{500, 600, 700, 800, 900, 1000}
	p := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 6), XScale: []float64{1, 1, 1, 1, 1, 1},
		Coef: mat.NewDense(6, 1, []float64{1, -2, 3, -1, 0.5, 2}), Intercept: []float64{4},
	}
	v, _, err := reg.AddStaged(context.Background(), registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS", Operator: operator,
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
