package inference

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference/preprocess"
)

// The model artifact of a trained model is a NumPy .npz file: a zip archive
// of .npy arrays (format 1.0, little-endian float64, C order) plus one JSON
// entry, meta.json, with the scalar metadata. A data scientist opens it with
// numpy.load; the server reads it with ReadArtifact. api/artifact.md is the
// reference for the layout.

// ArtifactFormat names the layout written into meta.json. Format 2 added
// the recipe, the regions and the review; wavenumbers.npy became the full
// axis of the spectrum (which with regions is longer than x_mean). Format 1
// files are still read (they have neither recipe nor regions, so their
// axis has x_mean's length).
const (
	ArtifactFormat   = "ramanserve-pls/2"
	artifactFormatV1 = "ramanserve-pls/1"
)

// Limits applied when reading an artifact, before anything is allocated.
const (
	maxArtifactFeatures   = 1 << 16
	maxArtifactComponents = 256
	maxArtifactSamples    = 1 << 22
	maxArtifactEntryBytes = 256 << 20
	maxArtifactMetaBytes  = 1 << 20
)

// artifactMeta is meta.json.
type artifactMeta struct {
	Format           string             `json:"format"`
	Version          string             `json:"version"`
	Algorithm        string             `json:"algorithm"`
	LatentComponents int                `json:"latent_components"`
	TrainedAt        time.Time          `json:"trained_at"`
	TrainedSamples   int                `json:"trained_samples"`
	NCalibration     int                `json:"n_calibration"`
	Targets          []string           `json:"targets"`
	RMSE             map[string]float64 `json:"rmse,omitempty"`
	R2               map[string]float64 `json:"r2,omitempty"`
	// Preprocessing is the recipe in the contract's form
	// (preprocess.Recipe.MarshalJSON, read by preprocess.ParseRecipe);
	// absent for raw intensities.
	Preprocessing json.RawMessage `json:"preprocessing,omitempty"`
	// Regions are inclusive [low, high] wavenumber pairs; absent when
	// every point of the axis enters the model.
	Regions [][]float64 `json:"regions,omitempty"`
}

// WriteArtifact writes p as an .npz artifact to w.
func WriteArtifact(w io.Writer, p *PLSParams) error {
	if p == nil || p.Coef == nil {
		return errors.New("write artifact: no coefficients")
	}
	zw := zip.NewWriter(w)
	meta := artifactMeta{
		Format: ArtifactFormat, Version: p.Meta.Version, Algorithm: p.Meta.Algorithm,
		LatentComponents: p.Meta.LatentComponents, TrainedAt: p.Meta.TrainedAt.UTC(),
		TrainedSamples: p.Meta.TrainedSamples, NCalibration: p.NCalibration,
		RMSE: breakdownMap(p.Meta.RMSE), R2: breakdownMap(p.Meta.R2),
	}
	for _, t := range p.Targets {
		meta.Targets = append(meta.Targets, t.String())
	}
	if len(p.Preprocessing) > 0 {
		rj, err := p.Preprocessing.MarshalJSON()
		if err != nil {
			return fmt.Errorf("write artifact: preprocessing: %w", err)
		}
		meta.Preprocessing = rj
	}
	for _, r := range p.Regions {
		meta.Regions = append(meta.Regions, []float64{r[0], r[1]})
	}
	if err := writeJSONMember(zw, "meta.json", meta); err != nil {
		return err
	}
	if p.Review != nil {
		if err := writeJSONMember(zw, "review.json", reviewJSON(p.Review)); err != nil {
			return err
		}
	}
	arrays := []struct {
		name string
		m    mat.Matrix
		v    []float64
	}{
		{"wavenumbers", nil, p.Meta.Wavenumbers},
		{"x_mean", nil, p.XMean},
		{"x_scale", nil, p.XScale},
		{"coef", p.Coef, nil},
		{"intercept", nil, p.Intercept},
		{"x_rotations", p.Rotations, nil},
		{"x_loadings", p.Loadings, nil},
		{"score_variance", nil, p.ScoreVariance},
		{"calibration_q", nil, p.CalibrationQ},
		{"heldout_t2", nil, p.HeldOutT2},
		{"heldout_q", nil, p.HeldOutQ},
		{"rmsecv", nil, p.RMSECV},
		{"tolerance", nil, p.Tolerance},
		{"scale_check", nil, scaleCheckArray(p.ScaleCheck)},
	}
	if r := p.Review; r != nil {
		arrays = append(arrays, []struct {
			name string
			m    mat.Matrix
			v    []float64
		}{
			{"review_measured", r.Measured, nil},
			{"review_cv_predicted", r.CVPredicted, nil},
			{"review_t2", nil, r.T2},
			{"review_q", nil, r.Q},
			{"review_studentized_residuals", r.StudentizedResiduals, nil},
			{"review_scores", r.Scores, nil},
			{"review_spectra", r.RawSpectra, nil},
			{"review_spectra_rows", nil, rowNumbers(r.RawSpectraRows)},
		}...)
	}
	for _, a := range arrays {
		var data []float64
		var shape []int
		switch {
		case a.m != nil && !isNilDense(a.m):
			r, c := a.m.Dims()
			data, shape = make([]float64, 0, r*c), []int{r, c}
			for i := 0; i < r; i++ {
				for j := 0; j < c; j++ {
					data = append(data, a.m.At(i, j))
				}
			}
		case a.v != nil:
			data, shape = a.v, []int{len(a.v)}
		default:
			continue
		}
		f, err := zw.Create(a.name + ".npy")
		if err != nil {
			return err
		}
		if err := writeNPY(f, shape, data); err != nil {
			return fmt.Errorf("write %s: %w", a.name, err)
		}
	}
	return zw.Close()
}

// readJSONMember decodes the archive member f, refusing one whose
// uncompressed size exceeds limit before reading it.
func readJSONMember(f *zip.File, limit int64, v any) error {
	if f.UncompressedSize64 > uint64(limit) {
		return fmt.Errorf("%s is too large", f.Name)
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	rc.Close()
	if err != nil {
		return fmt.Errorf("%s: %v", f.Name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", f.Name, err)
	}
	return nil
}

func writeJSONMember(zw *zip.Writer, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	f, err := zw.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return err
}

func isNilDense(m mat.Matrix) bool {
	d, ok := m.(*mat.Dense)
	return ok && d == nil
}

func breakdownMap(b Breakdown) map[string]float64 {
	m := map[string]float64{}
	for a := range NumAnalytes {
		if b.Valid[a] {
			m[Analyte(a).String()] = b.Value[a]
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// writeNPY writes one .npy (format 1.0) array of little-endian float64.
func writeNPY(w io.Writer, shape []int, data []float64) error {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	shapeText := strings.Join(dims, ", ")
	if len(shape) == 1 {
		shapeText += ","
	}
	header := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }", shapeText)
	// Magic (6) + version (2) + header length (2) + header + '\n' is padded
	// with spaces to a multiple of 64 bytes, as NumPy does.
	total := 10 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	var pre [10]byte
	copy(pre[:], "\x93NUMPY\x01\x00")
	binary.LittleEndian.PutUint16(pre[8:], uint16(len(header)))
	if _, err := w.Write(pre[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	buf := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	_, err := w.Write(buf)
	return err
}

var npyHeader = regexp.MustCompile(`^\{'descr': '<f8', 'fortran_order': False, 'shape': \((\d+)(?:, (\d+))?,?\), \} *\n$`)

// readNPY reads an .npy array written by writeNPY (or NumPy for a
// little-endian float64 C-order array of 1 or 2 dimensions).
func readNPY(f *zip.File) (shape []int, data []float64, err error) {
	if f.UncompressedSize64 > maxArtifactEntryBytes {
		return nil, nil, fmt.Errorf("%s is %d bytes, above the limit", f.Name, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	var pre [10]byte
	if _, err := io.ReadFull(rc, pre[:]); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if string(pre[:8]) != "\x93NUMPY\x01\x00" {
		return nil, nil, fmt.Errorf("%s is not an .npy 1.0 array", f.Name)
	}
	hlen := int(binary.LittleEndian.Uint16(pre[8:]))
	header := make([]byte, hlen)
	if _, err := io.ReadFull(rc, header); err != nil {
		return nil, nil, fmt.Errorf("%s header: %w", f.Name, err)
	}
	m := npyHeader.FindSubmatch(header)
	if m == nil {
		return nil, nil, fmt.Errorf("%s: unsupported array header %q (want little-endian float64, C order, 1 or 2 dimensions)", f.Name, header)
	}
	count := 1
	for _, g := range m[1:] {
		if len(g) == 0 {
			continue
		}
		d, err := strconv.Atoi(string(g))
		if err != nil || d > maxArtifactFeatures*maxArtifactComponents {
			return nil, nil, fmt.Errorf("%s: dimension %q out of range", f.Name, g)
		}
		shape = append(shape, d)
		count *= d
		if count > maxArtifactEntryBytes/8 {
			return nil, nil, fmt.Errorf("%s: %d elements, above the limit", f.Name, count)
		}
	}
	if uint64(10+hlen)+uint64(count)*8 != f.UncompressedSize64 {
		return nil, nil, fmt.Errorf("%s: shape %v does not match its %d bytes", f.Name, shape, f.UncompressedSize64)
	}
	raw := make([]byte, 8*count)
	if _, err := io.ReadFull(rc, raw); err != nil {
		return nil, nil, fmt.Errorf("%s data: %w", f.Name, err)
	}
	// Reading to the end makes the zip reader verify the entry's CRC-32.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	data = make([]float64, count)
	for i := range data {
		data[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return shape, data, nil
}

// ReadArtifact reads an .npz artifact. Every problem is reported as an
// error wrapping ErrModelCorrupted.
func ReadArtifact(r io.ReaderAt, size int64) (*PLSParams, error) {
	p, err := readArtifact(r, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModelCorrupted, err)
	}
	return p, nil
}

func readArtifact(r io.ReaderAt, size int64) (*PLSParams, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not an .npz archive: %v", err)
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	mf := files["meta.json"]
	if mf == nil {
		return nil, errors.New("meta.json is missing")
	}
	var meta artifactMeta
	if err := readJSONMember(mf, maxArtifactMetaBytes, &meta); err != nil {
		return nil, err
	}
	if meta.Format != ArtifactFormat && meta.Format != artifactFormatV1 {
		return nil, fmt.Errorf("format %q, want %q or %q", meta.Format, ArtifactFormat, artifactFormatV1)
	}
	if meta.Format == artifactFormatV1 && (meta.Preprocessing != nil || meta.Regions != nil) {
		return nil, fmt.Errorf("format %q has no preprocessing or regions", meta.Format)
	}
	if meta.NCalibration < 0 || meta.NCalibration > maxArtifactSamples || meta.LatentComponents < 0 || meta.LatentComponents > maxArtifactComponents {
		return nil, errors.New("meta.json: counts out of range")
	}
	p := &PLSParams{NCalibration: meta.NCalibration}
	p.Meta = Metadata{Version: meta.Version, Algorithm: meta.Algorithm, LatentComponents: meta.LatentComponents,
		TrainedAt: meta.TrainedAt, TrainedSamples: meta.TrainedSamples}
	for _, name := range meta.Targets {
		a, ok := ParseAnalyte(name)
		if !ok {
			return nil, fmt.Errorf("unknown target %q", name)
		}
		p.Targets = append(p.Targets, a)
	}
	if q := len(p.Targets); q == 0 || q > NumAnalytes {
		return nil, fmt.Errorf("%d targets", q)
	}
	for name, v := range meta.RMSE {
		if a, ok := ParseAnalyte(name); ok {
			p.Meta.RMSE.Set(a, v)
		}
	}
	for name, v := range meta.R2 {
		if a, ok := ParseAnalyte(name); ok {
			p.Meta.R2.Set(a, v)
		}
	}
	// member reads name.npy; found is false for a missing optional member.
	member := func(name string, required bool) (shape []int, data []float64, found bool, err error) {
		f := files[name+".npy"]
		if f == nil {
			if required {
				return nil, nil, false, fmt.Errorf("%s.npy is missing", name)
			}
			return nil, nil, false, nil
		}
		shape, data, err = readNPY(f)
		return shape, data, true, err
	}
	vector := func(name string, required bool) ([]float64, error) {
		shape, data, found, err := member(name, required)
		if err != nil || !found {
			return nil, err
		}
		if len(shape) != 1 {
			return nil, fmt.Errorf("%s has shape %v, want a vector", name, shape)
		}
		return data, nil
	}
	matrix := func(name string, required bool) (*mat.Dense, error) {
		shape, data, found, err := member(name, required)
		if err != nil || !found {
			return nil, err
		}
		if len(shape) != 2 || shape[0] == 0 || shape[1] == 0 {
			return nil, fmt.Errorf("%s has shape %v, want a non-empty matrix", name, shape)
		}
		return mat.NewDense(shape[0], shape[1], data), nil
	}
	if p.Meta.Wavenumbers, err = vector("wavenumbers", false); err != nil {
		return nil, err
	}
	if p.XMean, err = vector("x_mean", true); err != nil {
		return nil, err
	}
	if p.XScale, err = vector("x_scale", true); err != nil {
		return nil, err
	}
	if p.Coef, err = matrix("coef", true); err != nil {
		return nil, err
	}
	if p.Intercept, err = vector("intercept", true); err != nil {
		return nil, err
	}
	if p.Rotations, err = matrix("x_rotations", false); err != nil {
		return nil, err
	}
	if p.Loadings, err = matrix("x_loadings", false); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		dst  *[]float64
	}{{"score_variance", &p.ScoreVariance}, {"calibration_q", &p.CalibrationQ}, {"heldout_t2", &p.HeldOutT2}, {"heldout_q", &p.HeldOutQ},
		{"rmsecv", &p.RMSECV}, {"tolerance", &p.Tolerance}} {
		if *v.dst, err = vector(v.name, false); err != nil {
			return nil, err
		}
	}
	if p.ScaleCheck, err = readScaleCheck(vector); err != nil {
		return nil, err
	}
	if n := len(p.XMean); n == 0 || n > maxArtifactFeatures {
		return nil, fmt.Errorf("%d features", n)
	}
	if n := len(p.Meta.Wavenumbers); n > maxArtifactFeatures {
		return nil, fmt.Errorf("%d wavenumbers", n)
	}
	if p.Preprocessing, p.Regions, err = readRecipe(&meta); err != nil {
		return nil, err
	}
	if f := files["review.json"]; f != nil {
		if p.Review, err = readReview(f, len(p.Targets), member); err != nil {
			return nil, fmt.Errorf("review: %w", err)
		}
		if rs := p.Review.RawSpectra; rs != nil {
			if _, c := rs.Dims(); c != len(p.Meta.Wavenumbers) {
				return nil, fmt.Errorf("review: review_spectra has %d points, the axis %d", c, len(p.Meta.Wavenumbers))
			}
		}
	}
	// NewPLSModel checks the remaining dimensions against each other, and
	// compiles the recipe and regions against the axis.
	return p, nil
}

// readRecipe parses meta.json's preprocessing and regions.
func readRecipe(meta *artifactMeta) (preprocess.Recipe, [][2]float64, error) {
	var recipe preprocess.Recipe
	if raw := meta.Preprocessing; len(raw) > 0 && string(raw) != "null" {
		r, err := preprocess.ParseRecipe(raw) // at most preprocess.MaxSteps steps
		if err != nil {
			return nil, nil, fmt.Errorf("preprocessing: %v", err)
		}
		if len(r) > 0 {
			recipe = r
		}
	}
	if meta.Regions == nil {
		return recipe, nil, nil
	}
	if n := len(meta.Regions); n == 0 || n > preprocess.MaxRegions {
		return nil, nil, fmt.Errorf("%d regions, want 1 to %d", n, preprocess.MaxRegions)
	}
	regions := make([][2]float64, len(meta.Regions))
	for i, r := range meta.Regions {
		if len(r) != 2 {
			return nil, nil, fmt.Errorf("regions[%d] has %d values, want [low, high]", i, len(r))
		}
		regions[i] = [2]float64{r[0], r[1]}
	}
	return recipe, regions, nil
}

// artifactBytes is WriteArtifact into memory (tests and fuzzing).
func artifactBytes(p *PLSParams) ([]byte, error) {
	var b bytes.Buffer
	err := WriteArtifact(&b, p)
	return b.Bytes(), err
}
