package models

import (
	"bytes"
	"context"
	"fmt"
	"path"

	"ramanserve/inference"
	"ramanserve/inference/sklearn"
)

// Export formats of Export.
const (
	// FormatJoblib is a scikit-learn Pipeline saved as joblib saves it.
	FormatJoblib = "joblib"
	// FormatNPZ is the model's .npz artifact (api/artifact.md).
	FormatNPZ = "npz"
)

// Exported is a model written as a file to take elsewhere.
type Exported struct {
	// FileName is the version with the format's extension.
	FileName string
	Content  []byte
}

// Export writes a registered version, whatever its status, in format
// (FormatJoblib or FormatNPZ, else ErrExportFormat) without activating
// it. A joblib export is the model's scikit-learn Pipeline
// (sklearn.WriteJoblib), which the importer reads back as the same model.
// An npz export is the artifact itself: the registry's file of a model
// trained here, byte for byte, or an imported model's parameters written
// as an artifact. registry.ErrModelNotFound for an unknown version;
// inference.ErrModelCorrupted when its file no longer matches the
// registry's record.
func (s *Service) Export(ctx context.Context, version, format string) (Exported, error) {
	switch format {
	case FormatJoblib, FormatNPZ:
	default:
		return Exported{}, fmt.Errorf("%w: %q (joblib or npz)", ErrExportFormat, format)
	}
	out := Exported{FileName: version + "." + format}
	e, err := s.reg.Describe(version)
	if err != nil {
		return Exported{}, err
	}
	if format == FormatNPZ && path.Ext(e.File) == ".npz" {
		b, _, err := s.reg.ReadArtifact(ctx, version)
		if err != nil {
			return Exported{}, err
		}
		out.Content = b
		return out, nil
	}
	params, err := s.reg.ReadParams(ctx, version)
	if err != nil {
		return Exported{}, err
	}
	var buf bytes.Buffer
	if format == FormatNPZ {
		err = inference.WriteArtifact(&buf, params)
	} else {
		err = sklearn.WriteJoblib(&buf, params)
	}
	if err != nil {
		return Exported{}, fmt.Errorf("export %s as %s: %w", version, format, err)
	}
	out.Content = buf.Bytes()
	return out, nil
}
