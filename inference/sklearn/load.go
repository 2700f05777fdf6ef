// Package sklearn imports scikit-learn PLS models saved with joblib (or
// pickle) without executing them: a restricted pickle machine reads only
// what it understands and the model is rebuilt as inference.PLSParams,
// predicting what scikit-learn predicts. api/sklearn-import.md documents
// what is accepted.
package sklearn

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"math"

	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
)

// DefaultMaxDecompressedBytes caps the decompressed pickle stream. A
// 2048-feature PLS model with training scores is a few MB.
const DefaultMaxDecompressedBytes = 256 << 20

// Options of Load.
type Options struct {
	// Target names the analyte of a one-target model (from the registry
	// sidecar); "" when unknown, which refuses one-target models.
	Target string
	// MaxDecompressedBytes caps the stream after decompression; 0 means
	// DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int64
}

// Info says how a file was read.
type Info struct {
	Compression string // none, zlib, gzip, bz2, xz, lzma or lz4
	Layout      string // scikit-learn attribute layout: 0.24, 1.1-1.2, 1.3-1.4 or 1.5+
	Pipeline    bool   // a Pipeline ending in PLSRegression
	// Steps names a Pipeline's steps as Meta.Algorithm does, for example
	// [savgol_filter snv StandardScaler PLSRegression].
	Steps []string
}

// Load reads a joblib or pickle file from r and returns the model's
// parameters and how the file was read. Errors wrap inference.ErrModelCorrupted (unreadable),
// inference.ErrUnsafeModel (a class or function outside the allowlist),
// inference.ErrModelUnsupported (an allowlisted function or class in a
// form that cannot be reproduced exactly) or inference.ErrModelTargets (a
// one-target model without its analyte).
func Load(ctx context.Context, r io.Reader, opts Options) (*inference.PLSParams, Info, error) {
	var info Info
	limit := opts.MaxDecompressedBytes
	if limit <= 0 {
		limit = DefaultMaxDecompressedBytes
	}
	raw, method, err := decompress(r, limit)
	if err != nil {
		return nil, info, err
	}
	info.Compression = method
	if err := ctx.Err(); err != nil {
		return nil, info, err
	}
	m := &machine{buf: raw}
	v, err := m.run()
	if err != nil {
		return nil, info, err
	}
	if err := walk(v, once()); err != nil {
		return nil, info, err
	}
	p, err := toParams(v, opts, &info)
	return p, info, err
}

// once is a walk's visit that descends into each shared value once.
func once() func(any) bool {
	seen := map[any]bool{}
	return func(v any) bool {
		id := identity(v)
		if id == nil {
			return true
		}
		if seen[id] {
			return false
		}
		seen[id] = true
		return true
	}
}

// decompress detects the compression by its magic bytes and returns the
// whole decompressed stream, refusing more than limit bytes.
func decompress(r io.Reader, limit int64) ([]byte, string, error) {
	head := make([]byte, 6)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, "", corrupt("read: %v", err)
	}
	head = head[:n]
	src := io.MultiReader(bytes.NewReader(head), r)
	var dec io.Reader
	var method string
	switch {
	case n == 0:
		return nil, "", corrupt("empty file")
	case bytes.HasPrefix(head, []byte("ZF")):
		return nil, "", corrupt("legacy joblib format (before 0.10) is not supported")
	case head[0] == 0x80:
		dec, method = src, "none"
	case head[0] == 0x78:
		dec, err = zlib.NewReader(src)
		method = "zlib"
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		dec, err = gzip.NewReader(src)
		method = "gzip"
	case bytes.HasPrefix(head, []byte("BZh")):
		dec, method = bzip2.NewReader(src), "bz2"
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z'}):
		dec, err = xz.NewReader(src)
		method = "xz"
	case bytes.HasPrefix(head, []byte{0x5d, 0x00}):
		dec, err = lzma.NewReader(src)
		method = "lzma"
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		dec, method = lz4.NewReader(src), "lz4"
	default:
		return nil, "", corrupt("not a pickle or joblib file (starts with % x)", head)
	}
	if err != nil {
		return nil, "", corrupt("%s stream: %v", method, err)
	}
	out, err := io.ReadAll(io.LimitReader(dec, limit+1))
	if err != nil {
		return nil, "", corrupt("%s stream: %v", method, err)
	}
	if int64(len(out)) > limit {
		return nil, "", corrupt("the %s stream decompresses to more than %d bytes", method, limit)
	}
	return out, method, nil
}

// toParams maps a PLSRegression or a Pipeline ending in one (pipeline.go)
// to PLSParams.
func toParams(v any, opts Options, info *Info) (*inference.PLSParams, error) {
	obj, ok := v.(*object)
	if !ok {
		return nil, corrupt("the file holds a %T, not a scikit-learn model", v)
	}
	switch obj.class.name {
	case "PLSRegression":
		return plsParams(obj, nil, opts, info)
	case "Pipeline":
		return pipelineParams(obj, opts, info)
	}
	return nil, corrupt("a %s is not a PLS model", obj.class)
}

// arrayField returns a numeric array attribute, trying each name in turn.
func arrayField(st *dict, names ...string) (*ndarray, string) {
	for _, n := range names {
		if a, ok := st.get(n).(*ndarray); ok && a.floats != nil {
			return a, n
		}
	}
	return nil, ""
}

func vector(a *ndarray, p int, what string) ([]float64, error) {
	if a == nil {
		return nil, corrupt("%s is missing", what)
	}
	if count(a.shape) != p || (len(a.shape) == 2 && a.shape[0] != 1 && a.shape[1] != 1) {
		return nil, corrupt("%s has shape %v, want %d values", what, a.shape, p)
	}
	return a.floats, nil
}

func matrix(a *ndarray, r, c int, what string) (*mat.Dense, error) {
	if a == nil {
		return nil, corrupt("%s is missing", what)
	}
	if len(a.shape) != 2 || a.shape[0] != r || a.shape[1] != c {
		return nil, corrupt("%s has shape %v, want (%d, %d)", what, a.shape, r, c)
	}
	return mat.NewDense(r, c, append([]float64(nil), a.floats...)), nil
}

// plsParams maps a PLSRegression's state, with an optional StandardScaler
// in front, to PLSParams in the form y = ((x - XMean) / XScale) @ Coef +
// Intercept. The attribute layout differs by scikit-learn version (see
// api/sklearn-import.md); it is recognised from the attribute names and,
// for 1.3-1.4 against 1.5+, numerically.
func plsParams(pls, scaler *object, opts Options, info *Info) (*inference.PLSParams, error) {
	st, ok := pls.state.(*dict)
	if !ok {
		return nil, corrupt("PLSRegression state %T", pls.state)
	}
	xMeanA, meanName := arrayField(st, "_x_mean", "x_mean_")
	if xMeanA == nil {
		return nil, corrupt("PLSRegression has no x mean (_x_mean or x_mean_): was it fitted?")
	}
	p := count(xMeanA.shape)
	if p == 0 {
		return nil, corrupt("PLSRegression with no features")
	}
	xMean, _ := vector(xMeanA, p, meanName)
	xStdA, _ := arrayField(st, "_x_std", "x_std_")
	xStd, err := vector(xStdA, p, "x std")
	if err != nil {
		return nil, err
	}
	yMeanA, _ := arrayField(st, "_y_mean", "y_mean_")
	if yMeanA == nil {
		return nil, corrupt("PLSRegression has no y mean")
	}
	q := count(yMeanA.shape)
	yMean := yMeanA.floats
	yStdA, _ := arrayField(st, "_y_std", "y_std_")
	yStd, err := vector(yStdA, q, "y std")
	if err != nil {
		return nil, err
	}
	intercept := yMean
	if a, _ := arrayField(st, "intercept_"); a != nil {
		if intercept, err = vector(a, q, "intercept_"); err != nil {
			return nil, err
		}
	}
	rotations, _ := arrayField(st, "x_rotations_")
	loadings, _ := arrayField(st, "x_loadings_")
	yLoadings, _ := arrayField(st, "y_loadings_")

	// Coefficients in the 1.3-1.4 sense: (p, q), applied to (x - mean)/std.
	var coef *mat.Dense
	layout := ""
	switch {
	case meanName == "x_mean_": // 0.24 (and 1.0 with the old names)
		a, _ := arrayField(st, "coef_")
		if coef, err = matrix(a, p, q, "coef_"); err != nil {
			return nil, err
		}
		layout = "0.24"
	default:
		if a, _ := arrayField(st, "_coef_"); a != nil { // 1.1-1.2
			c, err := matrix(a, q, p, "_coef_")
			if err != nil {
				return nil, err
			}
			coef = mat.DenseCopyOf(c.T())
			layout = "1.1-1.2"
			break
		}
		a, _ := arrayField(st, "coef_")
		c, err := matrix(a, q, p, "coef_")
		if err != nil {
			return nil, err
		}
		coef = mat.DenseCopyOf(c.T())
		layout = "1.3-1.4"
		// 1.5+ stores coef_ already divided by x_std. Tell the two apart
		// against B = x_rotations_ @ y_loadings_' * y_std, in the 1.3 form.
		if is15, err := dividedByXStd(coef, rotations, yLoadings, xStd, yStd); err != nil {
			return nil, err
		} else if is15 {
			for i := 0; i < p; i++ {
				for k := 0; k < q; k++ {
					coef.Set(i, k, coef.At(i, k)*xStd[i])
				}
			}
			layout = "1.5+"
		}
	}

	params := &inference.PLSParams{
		XMean:     append([]float64(nil), xMean...),
		XScale:    append([]float64(nil), xStd...),
		Coef:      coef,
		Intercept: append([]float64(nil), intercept...),
	}
	if scaler != nil {
		// x' = (x - m)/s, then (x' - xm)/xs = (x - (m + s*xm)) / (s*xs).
		sst, ok := scaler.state.(*dict)
		if !ok {
			return nil, corrupt("StandardScaler state %T", scaler.state)
		}
		m := make([]float64, p)
		s := make([]float64, p)
		for i := range s {
			s[i] = 1
		}
		if a, _ := arrayField(sst, "mean_"); a != nil {
			if m, err = vector(a, p, "StandardScaler.mean_"); err != nil {
				return nil, err
			}
		}
		if a, _ := arrayField(sst, "scale_"); a != nil {
			if s, err = vector(a, p, "StandardScaler.scale_"); err != nil {
				return nil, err
			}
		}
		for i := 0; i < p; i++ {
			params.XMean[i] = m[i] + s[i]*xMean[i]
			params.XScale[i] = s[i] * xStd[i]
		}
	}
	for i, v := range params.XScale {
		if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(params.XMean[i]) {
			return nil, corrupt("feature %d has scale %v", i, v)
		}
	}

	nComp := 0
	if v, ok := st.get("n_components").(int64); ok {
		nComp = int(v)
	}
	algorithm := "sklearn-PLSRegression"
	if scaler != nil {
		algorithm = "sklearn-Pipeline(StandardScaler,PLSRegression)"
	}
	params.Meta = inference.Metadata{Algorithm: algorithm, LatentComponents: nComp}

	// Diagnostics from what the file holds: rotations and loadings give the
	// scores and Q; stored training scores give the score variances (T2).
	if rotations != nil && loadings != nil && len(rotations.shape) == 2 && rotations.shape[0] == p {
		a := rotations.shape[1]
		if params.Rotations, err = matrix(rotations, p, a, "x_rotations_"); err != nil {
			return nil, err
		}
		if params.Loadings, err = matrix(loadings, p, a, "x_loadings_"); err != nil {
			return nil, err
		}
		if scores, _ := arrayField(st, "_x_scores", "x_scores_"); scores != nil && len(scores.shape) == 2 && scores.shape[1] == a && scores.shape[0] > a+1 {
			n := scores.shape[0]
			params.NCalibration = n
			params.Meta.TrainedSamples = n
			params.ScoreVariance = make([]float64, a)
			for j := 0; j < a; j++ {
				var mean float64
				for i := 0; i < n; i++ {
					mean += scores.floats[i*a+j]
				}
				mean /= float64(n)
				var ss float64
				for i := 0; i < n; i++ {
					d := scores.floats[i*a+j] - mean
					ss += d * d
				}
				params.ScoreVariance[j] = ss / float64(n-1)
			}
		}
	}

	// Targets: three in the contract's order, or one named by the sidecar.
	switch q {
	case inference.NumAnalytes:
		params.Targets = []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}
	case 1:
		a, ok := inference.ParseAnalyte(opts.Target)
		if !ok {
			return nil, fmt.Errorf("%w: a one-target model must be paired with the analyte it predicts (sidecar {\"target\": \"EPA\"}); got %q", inference.ErrModelTargets, opts.Target)
		}
		params.Targets = []inference.Analyte{a}
	default:
		return nil, fmt.Errorf("%w: the model predicts %d targets; 3 (EPA, DHA, DPA) or 1 are supported", inference.ErrModelTargets, q)
	}
	info.Layout = layout
	return params, nil
}

// dividedByXStd reports whether coef (p x q, read as coef_.T) is in the 1.5+
// form B/x_std rather than the 1.3-1.4 form B, where B = x_rotations_ @
// y_loadings_' * y_std. With unit x_std the forms coincide and either
// answer is right.
func dividedByXStd(coef *mat.Dense, rotations, yLoadings *ndarray, xStd, yStd []float64) (bool, error) {
	p, q := coef.Dims()
	allOne := true
	for _, s := range xStd {
		if s != 1 {
			allOne = false
			break
		}
	}
	if allOne {
		return false, nil
	}
	if rotations == nil || yLoadings == nil || len(rotations.shape) != 2 || len(yLoadings.shape) != 2 ||
		rotations.shape[0] != p || yLoadings.shape[0] != q || rotations.shape[1] != yLoadings.shape[1] {
		return false, corrupt("cannot tell the coefficient layout: x_rotations_ or y_loadings_ missing")
	}
	a := rotations.shape[1]
	var err13, err15, norm float64
	for i := 0; i < p; i++ {
		for k := 0; k < q; k++ {
			var b float64
			for j := 0; j < a; j++ {
				b += rotations.floats[i*a+j] * yLoadings.floats[k*a+j]
			}
			b *= yStd[k]
			c := coef.At(i, k)
			err13 = math.Max(err13, math.Abs(c-b))
			err15 = math.Max(err15, math.Abs(c-b/xStd[i]))
			norm = math.Max(norm, math.Abs(b))
		}
	}
	tol := 1e-8 * math.Max(norm, 1e-300)
	switch {
	case err13 <= tol && err15 > tol:
		return false, nil
	case err15 <= tol && err13 > tol:
		return true, nil
	case err13 <= tol && err15 <= tol:
		return false, nil
	}
	return false, corrupt("coefficients match neither the 1.3-1.4 nor the 1.5+ layout (max deviations %.3g and %.3g)", err13, err15)
}
