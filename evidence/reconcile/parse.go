package reconcile

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"ramanserve/inference"
)

// ErrInvalidLabRecords is wrapped by every refusal of ParseJSON and
// ParseCSV (every error but the body's own read errors). Some refusals
// wrap one of the errors below as well, which say more about the kind of
// problem.
var ErrInvalidLabRecords = errors.New("invalid lab records")

var (
	// ErrMalformedJSON: a JSON post that is not well-formed JSON, or has
	// content after its array.
	ErrMalformedJSON = errors.New("lab records: not well-formed JSON")
	// ErrJSONSchema: a JSON post that is well-formed but breaks the schema
	// of a post, value by value: it must be an array of at most
	// MaxRecords objects whose keys are the record's fields, each value of
	// its field's JSON type (never null), batch_id and lab_sample_id
	// present and of 1 to MaxIDBytes characters, scan_seq an integer of
	// int64 from 0, sampled_at an RFC 3339 date-time, EPA, DHA and DPA
	// numbers from 0. This is the API contract's LabResult schema
	// (api/openapi.yaml), which the parser alone enforces; the rules past
	// it (ParseCSV's list) refuse a post with ErrInvalidLabRecords alone.
	ErrJSONSchema = errors.New("lab records: not an array of lab records")
	// ErrTooLarge: a post of more than MaxInputBytes.
	ErrTooLarge = errors.New("lab records: larger than the limit")
)

// RecordError says which record and which field of a lab post could not
// be parsed, and why. A post with any such error is refused as a whole.
type RecordError struct {
	// Index is the record's position in the post, from 0 (the first
	// element of the JSON array, the first CSV row after the header);
	// -1 when the problem is the post as a whole (its syntax, its size,
	// the CSV header).
	Index int
	// Field is the field's name as posted ("EPA", "sampled_at", ...), or
	// "" when the problem is not one field's.
	Field string
	// Reason says what is wrong, for a person.
	Reason string

	class errorClass
}

// errorClass is which of the errors above a RecordError wraps besides
// ErrInvalidLabRecords.
type errorClass int

const (
	classRule errorClass = iota // ErrInvalidLabRecords alone
	classMalformedJSON
	classJSONSchema
	classTooLarge
)

func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString("lab records: ")
	if e.Index >= 0 {
		fmt.Fprintf(&b, "record %d: ", e.Index)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap makes every RecordError an ErrInvalidLabRecords, and some also
// an ErrMalformedJSON, ErrJSONSchema or ErrTooLarge.
func (e *RecordError) Unwrap() []error {
	switch e.class {
	case classMalformedJSON:
		return []error{ErrInvalidLabRecords, ErrMalformedJSON}
	case classJSONSchema:
		return []error{ErrInvalidLabRecords, ErrJSONSchema}
	case classTooLarge:
		return []error{ErrInvalidLabRecords, ErrTooLarge}
	}
	return []error{ErrInvalidLabRecords}
}

func recordErr(index int, field, format string, args ...any) error {
	return &RecordError{Index: index, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func schemaErr(index int, field, format string, args ...any) error {
	return &RecordError{Index: index, Field: field, Reason: fmt.Sprintf(format, args...), class: classJSONSchema}
}

func syntaxErr(index int, format string, args ...any) error {
	return &RecordError{Index: index, Reason: fmt.Sprintf(format, args...), class: classMalformedJSON}
}

// jsonFailed turns an error of json.Decoder into the parser's: the
// post reader's refusals (too large, not UTF-8) as they are, a syntax
// error of the JSON decoder as ErrMalformedJSON, anything else as the
// body's read error, wrapped.
func jsonFailed(index int, err error) error {
	var re *RecordError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &se):
		return syntaxErr(index, "not valid JSON: %v (byte %d)", se, se.Offset)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return syntaxErr(index, "not valid JSON: the body ends in the middle of the array")
	}
	return fmt.Errorf("lab records: read: %w", err)
}

// The fields of a lab record, as named in JSON keys and CSV header cells.
const (
	fieldBatchID     = "batch_id"
	fieldScanSeq     = "scan_seq"
	fieldSampledAt   = "sampled_at"
	fieldLabSampleID = "lab_sample_id"
)

// fieldKind says which JSON type a field takes.
type fieldKind int

const (
	textField fieldKind = iota
	numberField
)

func kindOf(field string) (fieldKind, bool) {
	switch field {
	case fieldBatchID, fieldSampledAt, fieldLabSampleID:
		return textField, true
	case fieldScanSeq, "EPA", "DHA", "DPA":
		return numberField, true
	}
	return 0, false
}

// fieldBit gives each field a bit of a set, to find a key twice in one
// object without a map per record.
func fieldBit(field string) uint8 {
	switch field {
	case fieldBatchID:
		return 1 << 0
	case fieldScanSeq:
		return 1 << 1
	case fieldSampledAt:
		return 1 << 2
	case fieldLabSampleID:
		return 1 << 3
	case "EPA":
		return 1 << 4
	case "DHA":
		return 1 << 5
	case "DPA":
		return 1 << 6
	}
	return 0
}

// ParseJSON reads a lab post as a JSON array of objects:
//
//	[{"batch_id": "B-17", "scan_seq": 1042, "EPA": 181.5, "DHA": 92.0,
//	  "lab_sample_id": "HPLC-2291"},
//	 {"batch_id": "B-17", "sampled_at": "2026-11-23T08:15:00Z", "DPA": 20.1,
//	  "lab_sample_id": "HPLC-2292"}]
//
// Keys are exactly those of the CSV header (see ParseCSV); an optional
// field is absent when its key is. Any other key, a key twice in one
// object, null, a value of the wrong JSON type, or content after the
// array is refused. scan_seq is an integer literal; EPA, DHA and DPA are
// numbers.
//
// It streams: it reads r once, as far as the first refusal, and holds
// the records, not the body. The rules for each record are ParseCSV's.
// A refusal wraps ErrInvalidLabRecords and is a *RecordError naming the
// record's index and the field; it also wraps ErrMalformedJSON when the
// body is not JSON, ErrJSONSchema when a value breaks the post's schema,
// ErrTooLarge past MaxInputBytes. An error reading r is returned wrapped.
func ParseJSON(r io.Reader) ([]LabRecord, error) {
	dec := json.NewDecoder(newPostReader(r))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, syntaxErr(-1, "not valid JSON: the body is empty")
	}
	if err != nil {
		return nil, jsonFailed(-1, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, schemaErr(-1, "", "want a JSON array of records")
	}
	var p postChecker
	for dec.More() {
		i := len(p.records)
		if i >= MaxRecords {
			return nil, schemaErr(i, "", "too many records (at most %d)", MaxRecords)
		}
		rec, err := decodeJSONRecord(dec, i)
		if err != nil {
			return nil, err
		}
		if err := p.add(rec); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, jsonFailed(-1, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, jsonFailed(-1, err)
		}
		return nil, syntaxErr(-1, "not valid JSON: content after the array (byte %d)", dec.InputOffset())
	}
	return p.finish()
}

// decodeJSONRecord reads one object of the array into a record.
func decodeJSONRecord(dec *json.Decoder, index int) (LabRecord, error) {
	var rec LabRecord
	tok, err := dec.Token()
	if err != nil {
		return rec, jsonFailed(index, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return rec, schemaErr(index, "", "want an object")
	}
	var seen uint8
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return rec, jsonFailed(index, err)
		}
		key, _ := tok.(string) // the decoder only yields strings as keys
		kind, known := kindOf(key)
		if !known {
			return rec, schemaErr(index, key, "unknown field (want batch_id, scan_seq, sampled_at, EPA, DHA, DPA, lab_sample_id)")
		}
		if seen&fieldBit(key) != 0 {
			return rec, recordErr(index, key, "appears twice")
		}
		seen |= fieldBit(key)
		tok, err = dec.Token()
		if err != nil {
			return rec, jsonFailed(index, err)
		}
		want := "a string"
		if kind == numberField {
			want = "a number"
		}
		var literal string
		switch v := tok.(type) {
		case string:
			if kind != textField {
				return rec, schemaErr(index, key, "must be a number, got a string")
			}
			literal = v
		case json.Number:
			if kind != numberField {
				return rec, schemaErr(index, key, "must be a string, got a number")
			}
			literal = string(v)
		case nil:
			return rec, schemaErr(index, key, "must be %s, got null (leave an absent field out)", want)
		default:
			return rec, schemaErr(index, key, "must be %s", want)
		}
		if err := checkSchema(index, key, literal); err != nil {
			return rec, err
		}
		if err := setField(&rec, index, key, literal); err != nil {
			return rec, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return rec, jsonFailed(index, err)
	}
	for _, required := range []string{fieldBatchID, fieldLabSampleID} {
		if seen&fieldBit(required) == 0 {
			return rec, schemaErr(index, required, "is required")
		}
	}
	return rec, nil
}

// checkSchema checks a JSON value, given as its literal text (a string's
// content, a number as written), against its field's schema (see
// ErrJSONSchema). setField's rules come after it, and are stricter: an
// id's length is bounded in bytes, not characters; scan_seq must be
// written as digits alone, at most MaxScanSeq; concentrations are at
// most MaxConcentration; sampled_at from 1970.
func checkSchema(index int, field, literal string) error {
	switch field {
	case fieldBatchID, fieldLabSampleID:
		if n := utf8.RuneCountInString(literal); n == 0 || n > MaxIDBytes {
			return schemaErr(index, field, "must have 1 to %d characters, has %d", MaxIDBytes, n)
		}
	case fieldSampledAt:
		if _, ok := parseDateTime(literal); !ok {
			return schemaErr(index, field, "must be an RFC 3339 date-time with a zone (2026-11-23T08:15:00Z), got %q", clip(literal))
		}
	case fieldScanSeq:
		x, err := strconv.ParseFloat(literal, 64)
		switch {
		case err != nil || x != math.Trunc(x):
			return schemaErr(index, field, "must be an integer, got %s", clip(literal))
		case x < 0:
			return schemaErr(index, field, "must be at least 0, got %s", clip(literal))
		case x >= math.MaxInt64:
			return schemaErr(index, field, "must be an int64, got %s", clip(literal))
		}
	default: // an analyte
		x, err := strconv.ParseFloat(literal, 64)
		switch {
		case err != nil:
			return schemaErr(index, field, "must be a number a float64 holds, got %s", clip(literal))
		case x < 0:
			return schemaErr(index, field, "must be at least 0, got %s", clip(literal))
		}
	}
	return nil
}

// ParseCSV reads a lab post as CSV (RFC 4180, comma-separated, an
// optional UTF-8 byte order mark). The first row is the header; its cells
// name the columns, in any order, from
//
//	batch_id, scan_seq, sampled_at, EPA, DHA, DPA, lab_sample_id
//
// batch_id and lab_sample_id are required columns, as are at least one
// of EPA, DHA, DPA and at least one of scan_seq, sampled_at. Any other
// column, or one twice, is refused. An empty cell is an absent value.
//
// Each record (in either format):
//   - batch_id and lab_sample_id: required, 1 to MaxIDBytes bytes, no
//     control characters, no leading or trailing white space;
//     lab_sample_id is unique within the post.
//   - scan_seq: an integer literal from 0 to MaxScanSeq;
//     sampled_at: an RFC 3339 date-time with a zone
//     ("2026-11-23T08:15:00Z", fractions of a second allowed), from
//     1970. At least one of the two; when both are given, scan_seq is
//     what the record is matched by.
//   - EPA, DHA, DPA: concentrations in g/L, decimal numbers from 0 to
//     MaxConcentration; at least one of the three.
//
// A post has 1 to MaxRecords records in at most MaxInputBytes of UTF-8.
// It streams, as ParseJSON does. A refusal wraps ErrInvalidLabRecords
// (and ErrTooLarge past MaxInputBytes) and is a *RecordError naming the
// record's index (from 0, the first row after the header) and the field.
// An error reading r is returned wrapped.
func ParseCSV(r io.Reader) ([]LabRecord, error) {
	br := bufio.NewReader(newPostReader(r))
	if bom, err := br.Peek(len(utf8BOM)); err == nil && string(bom) == utf8BOM {
		_, _ = br.Discard(len(utf8BOM))
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, recordErr(-1, "", "no header row")
	}
	if err != nil {
		return nil, csvFailed(-1, "header: ", err)
	}
	columns, err := csvColumns(header)
	if err != nil {
		return nil, err
	}
	var p postChecker
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		i := len(p.records)
		if err != nil {
			return nil, csvFailed(i, "", err)
		}
		if i >= MaxRecords {
			return nil, recordErr(i, "", "too many records (at most %d)", MaxRecords)
		}
		var rec LabRecord
		for c, cell := range row {
			if cell == "" {
				continue // absent
			}
			if err := setField(&rec, i, columns[c], cell); err != nil {
				return nil, err
			}
		}
		if err := p.add(rec); err != nil {
			return nil, err
		}
	}
	return p.finish()
}

// utf8BOM is the byte order mark a CSV post may start with.
const utf8BOM = "\uFEFF"

// csvFailed turns an error of csv.Reader into the parser's: the post
// reader's refusals as they are, a CSV syntax error as a refusal of the
// row, anything else as the body's read error, wrapped.
func csvFailed(index int, prefix string, err error) error {
	var re *RecordError
	var pe *csv.ParseError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &pe):
		return recordErr(index, "", "%s%v", prefix, pe)
	}
	return fmt.Errorf("lab records: read: %w", err)
}

// csvColumns checks the header and returns the field of each column.
func csvColumns(header []string) ([]string, error) {
	columns := make([]string, len(header))
	seen := make(map[string]bool, len(header))
	for c, name := range header {
		if _, ok := kindOf(name); !ok {
			return nil, recordErr(-1, name, "unknown column (want batch_id, scan_seq, sampled_at, EPA, DHA, DPA, lab_sample_id)")
		}
		if seen[name] {
			return nil, recordErr(-1, name, "column appears twice")
		}
		seen[name] = true
		columns[c] = name
	}
	for _, required := range []string{fieldBatchID, fieldLabSampleID} {
		if !seen[required] {
			return nil, recordErr(-1, required, "required column is missing")
		}
	}
	if !seen["EPA"] && !seen["DHA"] && !seen["DPA"] {
		return nil, recordErr(-1, "", "no analyte column (EPA, DHA or DPA)")
	}
	if !seen[fieldScanSeq] && !seen[fieldSampledAt] {
		return nil, recordErr(-1, "", "neither a scan_seq nor a sampled_at column")
	}
	return columns, nil
}

// setField checks one present value, given as its literal text, and
// stores it in rec.
func setField(rec *LabRecord, index int, field, literal string) error {
	switch field {
	case fieldBatchID:
		if err := checkID(index, field, literal); err != nil {
			return err
		}
		rec.BatchID = literal
	case fieldLabSampleID:
		if err := checkID(index, field, literal); err != nil {
			return err
		}
		rec.LabSampleID = literal
	case fieldScanSeq:
		seq, err := strconv.ParseInt(literal, 10, 64)
		if err != nil || !allDigits(literal) || seq > MaxScanSeq {
			return recordErr(index, field, "must be an integer from 0 to %d, got %q", int64(MaxScanSeq), clip(literal))
		}
		rec.ScanSeq, rec.HasScanSeq = seq, true
	case fieldSampledAt:
		t, ok := parseDateTime(literal)
		if !ok {
			return recordErr(index, field, "must be an RFC 3339 time with a zone, got %q", clip(literal))
		}
		// The bound is on the UTC instant, as stored: a local 1970 time
		// east of Greenwich is a 1969 instant that would not parse back.
		t = t.UTC()
		if t.Year() < 1970 {
			return recordErr(index, field, "is before 1970-01-01T00:00:00Z: %q", clip(literal))
		}
		rec.SampledAt = t
	default:
		a, _ := inference.ParseAnalyte(field)
		x, err := parseDecimal(literal)
		if err != nil || !finiteConcentration(x) {
			return recordErr(index, field, "must be a concentration in g/L from 0 to %g, got %q", float64(MaxConcentration), clip(literal))
		}
		rec.Lab.Set(a, x+0) // +0: no negative zero
	}
	return nil
}

// parseDateTime parses an RFC 3339 date-time with a zone. time.Parse
// alone would take forms RFC 3339 has not (a one-digit hour, a comma
// before the fraction, a zone of +24:00).
func parseDateTime(s string) (time.Time, bool) {
	if !rfc3339Form(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// rfc3339Form reports whether s is written as an RFC 3339 date-time:
// 2006-01-02T15:04:05, an optional fraction of a second after a '.', and
// a zone, Z or a numeric offset of at most 23:59 (T and Z upper case, as
// the contract's date-time format has them). time.Parse checks the other
// fields' ranges.
func rfc3339Form(s string) bool {
	const form = "dddd-dd-ddTdd:dd:dd" // d: a digit
	if len(s) <= len(form) {
		return false
	}
	for i := range len(form) {
		if form[i] == 'd' && !isDigit(s[i]) || form[i] != 'd' && s[i] != form[i] {
			return false
		}
	}
	zone := s[len(form):]
	if zone[0] == '.' {
		n := 1
		for n < len(zone) && isDigit(zone[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		zone = zone[n:]
	}
	if zone == "Z" {
		return true
	}
	return len(zone) == len("+07:00") && (zone[0] == '+' || zone[0] == '-') &&
		isDigit(zone[1]) && isDigit(zone[2]) && zone[3] == ':' && isDigit(zone[4]) && isDigit(zone[5]) &&
		(zone[1]-'0')*10+zone[2]-'0' <= 23 && zone[4] <= '5'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseDecimal accepts only decimal literals (digits, '.', an exponent,
// signs but no leading '+'): no NaN, Inf, hexadecimal or underscores,
// which strconv.ParseFloat alone would take.
func parseDecimal(s string) (float64, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9') && c != '.' && c != 'e' && c != 'E' && c != '-' && (c != '+' || i == 0) {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseFloat(s, 64)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkID checks a batch_id or lab_sample_id.
func checkID(index int, field, s string) error {
	switch {
	case s == "":
		return recordErr(index, field, "must not be empty")
	case len(s) > MaxIDBytes:
		return recordErr(index, field, "longer than %d bytes", MaxIDBytes)
	case strings.TrimSpace(s) != s:
		return recordErr(index, field, "has leading or trailing white space: %q", s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return recordErr(index, field, "has a control character: %q", s)
	}
	return nil
}

// clip shortens a literal quoted back in an error message.
func clip(s string) string {
	const most = 40
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// postChecker applies the rules that span a record (required fields) and
// a post (unique lab_sample_id, at least one record).
type postChecker struct {
	records []LabRecord
	ids     map[string]int
}

func (p *postChecker) add(rec LabRecord) error {
	i := len(p.records)
	switch {
	case rec.BatchID == "":
		return recordErr(i, fieldBatchID, "is required")
	case rec.LabSampleID == "":
		return recordErr(i, fieldLabSampleID, "is required")
	case countValid(rec.Lab) == 0:
		return recordErr(i, "", "has no concentration (EPA, DHA or DPA)")
	case !rec.HasScanSeq && rec.SampledAt.IsZero():
		return recordErr(i, "", "has neither scan_seq nor sampled_at")
	}
	if p.ids == nil {
		p.ids = make(map[string]int)
	}
	if first, dup := p.ids[rec.LabSampleID]; dup {
		return recordErr(i, fieldLabSampleID, "%q is also record %d's", rec.LabSampleID, first)
	}
	p.ids[rec.LabSampleID] = i
	p.records = append(p.records, rec)
	return nil
}

func (p *postChecker) finish() ([]LabRecord, error) {
	if len(p.records) == 0 {
		return nil, recordErr(-1, "", "no records")
	}
	return p.records, nil
}
