package preprocess

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// MaxSteps is the contract's maxItems of TrainingMeta.preprocessing.
const MaxSteps = 16

// Defaults of the optional parameters, as in the contract.
const (
	DefaultThreshold  = 6.0
	DefaultWidth      = 2
	DefaultDeriv      = 0
	DefaultLambda     = 1e5
	DefaultP          = 0.01
	DefaultIterations = 10
)

// Schema bounds of the contract's step parameters. They are checked by
// ParseRecipe (a recipe also comes from model files on disk, which no
// schema validator has seen) and again by Compile (a Recipe may be built in
// Go, for example from a scikit-learn pipeline).
const (
	minThreshold, maxThreshold   = 1.0, 1000.0
	minWidth, maxWidth           = 0, 16
	minWindow, maxWindow         = 3, 2047
	minPolyOrder, maxPolyOrder   = 0, 10
	minDeriv, maxDeriv           = 0, 4
	minLambda, maxLambda         = 1.0, 1e12
	minIterations, maxIterations = 1, 50
	// p lies in the open interval (0, 0.5).
)

// FieldError is a recipe or region error that names its field, for example
// "preprocessing[1].window". It wraps ErrInvalidRecipe.
type FieldError struct {
	Field  string // "preprocessing[1].window", "regions[0]"
	Reason string
}

func (e *FieldError) Error() string {
	return ErrInvalidRecipe.Error() + ": " + e.Field + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalidRecipe) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidRecipe }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func stepField(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("preprocessing[%d]", i)
	}
	return fmt.Sprintf("preprocessing[%d].%s", i, name)
}

// The fields each kind accepts besides `step`.
var kindFields = map[Kind][]string{
	Despike:     {"threshold", "width"},
	Savgol:      {"window", "polyorder", "deriv"},
	SNV:         {},
	ALSBaseline: {"lam", "p", "iterations"},
	Normalize:   {"region"},
}

// ParseRecipe reads the JSON form of a recipe (an array of the contract's
// PreprocessingStep objects), fills in defaults and checks each step's
// bounds that do not depend on an axis. Errors wrap ErrInvalidRecipe.
//
// It is strict: the top level must be an array of at most MaxSteps
// objects; an unknown `step`, an unknown or repeated field, a missing
// required field (savgol's window and polyorder, normalize's region), a
// null, a number where an integer is required, a value outside the
// contract's bounds, a recipe over its cost bound (checkCost) and trailing
// data are all errors.
func ParseRecipe(b []byte) (Recipe, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := expectDelim(dec, '['); err != nil {
		return nil, fieldErr("preprocessing", "must be a JSON array of steps: %v", err)
	}
	r := Recipe{}
	for i := 0; dec.More(); i++ {
		if i >= MaxSteps {
			return nil, fieldErr("preprocessing", "more than %d steps", MaxSteps)
		}
		fields, err := readObject(dec)
		if err != nil {
			return nil, fieldErr(stepField(i, ""), "%v", err)
		}
		s, err := parseStep(i, fields)
		if err != nil {
			return nil, err
		}
		r = append(r, s)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return nil, fieldErr("preprocessing", "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fieldErr("preprocessing", "trailing data after the array")
	}
	if err := r.checkCost(); err != nil {
		return nil, err
	}
	return r, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", string(want), t)
	}
	return nil
}

// readObject reads one JSON object into its raw field values, refusing
// repeated keys (encoding/json would silently keep the last).
func readObject(dec *json.Decoder) (map[string]json.RawMessage, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("a step must be a JSON object: %v", err)
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("expected a field name, found %v", t)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("field %q: %v", key, err)
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("field %q appears twice", key)
		}
		fields[key] = raw
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return fields, nil
}

func parseStep(i int, fields map[string]json.RawMessage) (Step, error) {
	rawKind, ok := fields["step"]
	if !ok {
		return Step{}, fieldErr(stepField(i, "step"), "is required")
	}
	var name string
	if isNull(rawKind) || json.Unmarshal(rawKind, &name) != nil {
		return Step{}, fieldErr(stepField(i, "step"), "must be a string")
	}
	kind := Kind(name)
	allowed, known := kindFields[kind]
	if !known {
		return Step{}, fieldErr(stepField(i, "step"), "unknown step %q (known: despike, savgol, snv, als_baseline, normalize)", name)
	}
	for key := range fields {
		if key != "step" && !contains(allowed, key) {
			return Step{}, fieldErr(stepField(i, key), "unknown field for step %q", name)
		}
	}
	s := Step{Kind: kind}
	var err error
	switch kind {
	case Despike:
		s.Threshold, s.Width = DefaultThreshold, DefaultWidth
		err = firstErr(
			optNumber(fields, i, "threshold", &s.Threshold),
			optInt(fields, i, "width", &s.Width))
	case Savgol:
		s.Deriv = DefaultDeriv
		err = firstErr(
			reqInt(fields, i, "window", &s.Window),
			reqInt(fields, i, "polyorder", &s.PolyOrder),
			optInt(fields, i, "deriv", &s.Deriv))
	case ALSBaseline:
		s.Lambda, s.P, s.Iterations = DefaultLambda, DefaultP, DefaultIterations
		err = firstErr(
			optNumber(fields, i, "lam", &s.Lambda),
			optNumber(fields, i, "p", &s.P),
			optInt(fields, i, "iterations", &s.Iterations))
	case Normalize:
		err = reqRegion(fields, i, "region", &s.Region)
	}
	if err != nil {
		return Step{}, err
	}
	if err := s.checkBounds(i); err != nil {
		return Step{}, err
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func optNumber(fields map[string]json.RawMessage, i int, name string, dst *float64) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	return parseNumber(raw, stepField(i, name), dst)
}

func parseNumber(raw json.RawMessage, field string, dst *float64) error {
	var v float64
	if isNull(raw) || json.Unmarshal(raw, &v) != nil {
		return fieldErr(field, "must be a finite number")
	}
	*dst = v
	return nil
}

func optInt(fields map[string]json.RawMessage, i int, name string, dst *int) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	var v int
	if isNull(raw) || json.Unmarshal(raw, &v) != nil {
		return fieldErr(stepField(i, name), "must be an integer")
	}
	*dst = v
	return nil
}

func reqInt(fields map[string]json.RawMessage, i int, name string, dst *int) error {
	if _, ok := fields[name]; !ok {
		return fieldErr(stepField(i, name), "is required")
	}
	return optInt(fields, i, name, dst)
}

func reqRegion(fields map[string]json.RawMessage, i int, name string, dst *[2]float64) error {
	raw, ok := fields[name]
	if !ok {
		return fieldErr(stepField(i, name), "is required")
	}
	var pair []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &pair) != nil || len(pair) != 2 {
		return fieldErr(stepField(i, name), "must be an array [low, high] of two numbers")
	}
	for k := range pair {
		if err := parseNumber(pair[k], fmt.Sprintf("%s[%d]", stepField(i, name), k), &dst[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkBounds checks the contract's schema bounds of step i (nothing that
// depends on an axis).
func (s Step) checkBounds(i int) error {
	switch s.Kind {
	case Despike:
		if !(s.Threshold >= minThreshold && s.Threshold <= maxThreshold) {
			return fieldErr(stepField(i, "threshold"), "%v is outside [%v, %v]", s.Threshold, minThreshold, maxThreshold)
		}
		if s.Width < minWidth || s.Width > maxWidth {
			return fieldErr(stepField(i, "width"), "%d is outside [%d, %d]", s.Width, minWidth, maxWidth)
		}
	case Savgol:
		if s.Window < minWindow || s.Window > maxWindow {
			return fieldErr(stepField(i, "window"), "%d is outside [%d, %d]", s.Window, minWindow, maxWindow)
		}
		if s.PolyOrder < minPolyOrder || s.PolyOrder > maxPolyOrder {
			return fieldErr(stepField(i, "polyorder"), "%d is outside [%d, %d]", s.PolyOrder, minPolyOrder, maxPolyOrder)
		}
		if s.Deriv < minDeriv || s.Deriv > maxDeriv {
			return fieldErr(stepField(i, "deriv"), "%d is outside [%d, %d]", s.Deriv, minDeriv, maxDeriv)
		}
	case SNV:
	case ALSBaseline:
		if !(s.Lambda >= minLambda && s.Lambda <= maxLambda) {
			return fieldErr(stepField(i, "lam"), "%v is outside [%v, %v]", s.Lambda, minLambda, maxLambda)
		}
		if !(s.P > 0 && s.P < 0.5) {
			return fieldErr(stepField(i, "p"), "%v is outside the open interval (0, 0.5)", s.P)
		}
		if s.Iterations < minIterations || s.Iterations > maxIterations {
			return fieldErr(stepField(i, "iterations"), "%d is outside [%d, %d]", s.Iterations, minIterations, maxIterations)
		}
	case Normalize:
		for k, v := range s.Region {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fieldErr(fmt.Sprintf("%s[%d]", stepField(i, "region"), k), "must be a finite number")
			}
		}
	default:
		return fieldErr(stepField(i, "step"), "unknown step %q (known: despike, savgol, snv, als_baseline, normalize)", string(s.Kind))
	}
	return nil
}

// checkBounds checks every step's schema bounds, the step count and the
// recipe's cost.
func (r Recipe) checkBounds() error {
	if len(r) > MaxSteps {
		return fieldErr("preprocessing", "more than %d steps", MaxSteps)
	}
	for i, s := range r {
		if err := s.checkBounds(i); err != nil {
			return err
		}
	}
	return r.checkCost()
}

// checkCost bounds what one spectrum costs to preprocess, since every
// predict pays it: at most one als_baseline step (each round is a banded
// solve over the whole spectrum: up to 50 of them, about 0.5 ms for 2048
// points), and Savitzky-Golay windows that sum to at most maxWindow
// (a window of w costs w multiply-adds per point: 2047 of them is about
// 2 ms). Sixteen steps of the largest kind would otherwise cost tens of
// milliseconds per spectrum.
func (r Recipe) checkCost() error {
	als, windows := 0, 0
	for i, s := range r {
		switch s.Kind {
		case ALSBaseline:
			if als++; als > 1 {
				return fieldErr(stepField(i, "step"), "a recipe holds at most one als_baseline step")
			}
		case Savgol:
			if windows += s.Window; windows > maxWindow {
				return fieldErr(stepField(i, "window"), "the savgol windows of a recipe sum to %d, more than %d", windows, maxWindow)
			}
		}
	}
	return nil
}

// MarshalJSON writes the recipe in the contract's form with every
// parameter explicit, so that ParseRecipe reads back the same Recipe.
// Each step carries `step` first and then only the fields of its kind;
// a nil or empty recipe is `[]`. A recipe outside the contract's bounds is
// an error wrapping ErrInvalidRecipe.
func (r Recipe) MarshalJSON() ([]byte, error) {
	if err := r.checkBounds(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64*len(r)+2)
	b = append(b, '[')
	for i, s := range r {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"step":"`...)
		b = append(b, s.Kind...)
		b = append(b, '"')
		switch s.Kind {
		case Despike:
			b = appendFloat(b, "threshold", s.Threshold)
			b = appendInt(b, "width", s.Width)
		case Savgol:
			b = appendInt(b, "window", s.Window)
			b = appendInt(b, "polyorder", s.PolyOrder)
			b = appendInt(b, "deriv", s.Deriv)
		case ALSBaseline:
			b = appendFloat(b, "lam", s.Lambda)
			b = appendFloat(b, "p", s.P)
			b = appendInt(b, "iterations", s.Iterations)
		case Normalize:
			b = append(b, `,"region":[`...)
			b = appendNumber(b, s.Region[0])
			b = append(b, ',')
			b = appendNumber(b, s.Region[1])
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendFloat(b []byte, name string, v float64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendNumber(b, v)
}

// appendNumber writes v as encoding/json does (shortest form that reads
// back exactly; 1e+21 and up, and below 1e-6, in exponent form).
func appendNumber(b []byte, v float64) []byte {
	out, err := json.Marshal(v)
	if err != nil { // not finite: checkBounds has refused it already
		return append(b, "null"...)
	}
	return append(b, out...)
}

func appendInt(b []byte, name string, v int) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return strconv.AppendInt(b, int64(v), 10)
}
