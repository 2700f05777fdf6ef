package registry

import (
	"context"
	"io"
	"path"

	"ramanserve/inference"
	"ramanserve/inference/modelfile"
)

// FileOpeners maps the registry's file extensions to model readers: .npz
// artifacts of models trained here, and scikit-learn .joblib files read
// with the restricted reader (nothing in them is executed). opts carries
// the instrument axis that models without their own axis get.
func FileOpeners(opts inference.ModelOptions) map[string]OpenFunc {
	return map[string]OpenFunc{
		".npz": func(ctx context.Context, content *io.SectionReader, e Entry) (inference.Model, error) {
			p, err := readModelFile(ctx, content, e)
			if err != nil {
				return nil, err
			}
			p.Meta.Version = e.Version
			return inference.NewPLSModel(p, opts)
		},
		".joblib": func(ctx context.Context, content *io.SectionReader, e Entry) (inference.Model, error) {
			return openJoblib(ctx, content, e, opts)
		},
	}
}

// readModelFile reads the parameters of a model artifact of either kind
// (modelfile.Read), at the offsets its format needs: the content is never
// read into memory whole.
func readModelFile(ctx context.Context, content *io.SectionReader, e Entry) (*inference.PLSParams, error) {
	return modelfile.Read(ctx, content, content.Size(), path.Ext(e.File), e.Target)
}

// openJoblib reads a scikit-learn .joblib file. scikit-learn files carry
// no wavenumber axis: the model gets the instrument axis when its feature
// count matches it. A one-target model names its analyte in its sidecar,
// which the registry read at import (Entry.Target).
func openJoblib(ctx context.Context, content *io.SectionReader, e Entry, opts inference.ModelOptions) (inference.Model, error) {
	params, err := readModelFile(ctx, content, e)
	if err != nil {
		return nil, err
	}
	params.Meta.Version = e.Version
	params.Meta.TrainedAt = e.TrainedAt
	if len(opts.InstrumentAxis) != len(params.XMean) {
		opts.InstrumentAxis = nil
	}
	return inference.NewPLSModel(params, opts)
}
