package reconcile

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"ramanserve/inference"
)

// ErrInvalidLabRecords is wrapped by every error of ParseJSON and ParseCSV.
var ErrInvalidLabRecords = errors.New("invalid lab records")

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
}

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

// Unwrap makes every RecordError an ErrInvalidLabRecords.
func (e *RecordError) Unwrap() error { return ErrInvalidLabRecords }

func recordErr(index int, field, format string, args ...any) error {
	return &RecordError{Index: index, Field: field, Reason: fmt.Sprintf(format, args...)}
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

// readBounded reads all of r, refusing more than MaxInputBytes and
// anything that is not UTF-8 (encoding/json would otherwise replace bad
// bytes inside strings silently, and an id that does not round-trip can
// never match).
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lab records: read: %w", err)
	}
	if len(data) > MaxInputBytes {
		return nil, recordErr(-1, "", "larger than %d bytes", MaxInputBytes)
	}
	if !utf8.Valid(data) {
		return nil, recordErr(-1, "", "not valid UTF-8")
	}
	return data, nil
}

// ParseJSON reads a lab post as a JSON array of objects:
//
//	[{"batch_id": "B-17", "scan_seq": 1042, "EPA": 181.5, "DHA": 92.0,
//	  "lab_sample_id": "HPLC-2291"},
//	 {"batch_id": "B-17", "sampled_at": "2026-11-23T08:15:00Z", "DPA": 20.1,
//	  "lab_sample_id": "HPLC-2292"}]
//
// Keys are exactly those of the CSV header (see ParseCSV); any other key,
// a key twice in one object, a value of the wrong JSON type, or content
// after the array is refused. null stands for an absent optional field.
// scan_seq is an integer literal; EPA, DHA and DPA are numbers.
//
// The rules for each record are ParseCSV's. Errors wrap
// ErrInvalidLabRecords and, for a record's problem, are a *RecordError
// naming the record's index and the field.
func ParseJSON(r io.Reader) ([]LabRecord, error) {
	data, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := expectDelim(dec, '[', -1, "", "a JSON array of records"); err != nil {
		return nil, err
	}
	var p postChecker
	for dec.More() {
		i := len(p.records)
		if i >= MaxRecords {
			return nil, recordErr(i, "", "too many records (at most %d)", MaxRecords)
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
		return nil, recordErr(-1, "", "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, recordErr(-1, "", "content after the array")
	}
	return p.finish()
}

// expectDelim reads one token and refuses anything but delim.
func expectDelim(dec *json.Decoder, delim json.Delim, index int, field, want string) error {
	tok, err := dec.Token()
	if err != nil {
		return recordErr(index, field, "want %s: %v", want, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != delim {
		return recordErr(index, field, "want %s", want)
	}
	return nil
}

// decodeJSONRecord reads one object of the array into a record.
func decodeJSONRecord(dec *json.Decoder, index int) (LabRecord, error) {
	var rec LabRecord
	if err := expectDelim(dec, '{', index, "", "an object"); err != nil {
		return rec, err
	}
	seen := make(map[string]bool, 7)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return rec, recordErr(index, "", "%v", err)
		}
		key, _ := tok.(string) // the decoder only yields strings as keys
		kind, known := kindOf(key)
		if !known {
			return rec, recordErr(index, key, "unknown field")
		}
		if seen[key] {
			return rec, recordErr(index, key, "appears twice")
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return rec, recordErr(index, key, "%v", err)
		}
		var literal string
		switch v := tok.(type) {
		case nil:
			continue // absent
		case string:
			if kind != textField {
				return rec, recordErr(index, key, "must be a number, got a string")
			}
			literal = v
		case json.Number:
			if kind != numberField {
				return rec, recordErr(index, key, "must be a string, got a number")
			}
			literal = string(v)
		default:
			want := "a string"
			if kind == numberField {
				want = "a number"
			}
			return rec, recordErr(index, key, "must be %s", want)
		}
		if err := setField(&rec, index, key, literal); err != nil {
			return rec, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return rec, recordErr(index, "", "%v", err)
	}
	return rec, nil
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
//     sampled_at: an RFC 3339 time with a zone ("2026-11-23T08:15:00Z",
//     fractions of a second allowed). At least one of the two; when both
//     are given, scan_seq is what the record is matched by.
//   - EPA, DHA, DPA: concentrations in g/L, decimal numbers from 0 to
//     MaxConcentration; at least one of the three.
//
// A post has 1 to MaxRecords records in at most MaxInputBytes. Errors
// wrap ErrInvalidLabRecords and, for a record's problem, are a
// *RecordError naming the record's index (from 0, the first row after the
// header) and the field.
func ParseCSV(r io.Reader) ([]LabRecord, error) {
	data, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, recordErr(-1, "", "no header row")
	}
	if err != nil {
		return nil, recordErr(-1, "", "header: %v", err)
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
			return nil, recordErr(i, "", "%v", err)
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
		t, err := time.Parse(time.RFC3339Nano, literal)
		if err != nil {
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
