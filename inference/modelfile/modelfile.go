// Package modelfile reads a model's parameters from a registry file of
// either kind, told apart by its extension: the .npz artifact of a model
// trained here (inference.ReadArtifact) or a scikit-learn .joblib file
// (inference/sklearn). The server's model openers and the registry's
// ReadParams (the review page) share it, so a new kind of file is added in
// one place.
package modelfile

import (
	"context"
	"fmt"
	"io"

	"ramanserve/inference"
	"ramanserve/inference/sklearn"
)

// Read parses the size bytes of r as a model file with extension ext
// (".npz" or ".joblib"). target names the analyte of a one-target
// scikit-learn model ("" when unknown). An unknown extension is an error
// wrapping inference.ErrModelCorrupted; so is every file that cannot be
// read.
func Read(ctx context.Context, r io.ReaderAt, size int64, ext, target string) (*inference.PLSParams, error) {
	switch ext {
	case ".npz":
		return inference.ReadArtifact(r, size)
	case ".joblib":
		p, _, err := sklearn.Load(ctx, io.NewSectionReader(r, 0, size), sklearn.Options{Target: target})
		return p, err
	default:
		return nil, fmt.Errorf("%w: no reader for %q files", inference.ErrModelCorrupted, ext)
	}
}
