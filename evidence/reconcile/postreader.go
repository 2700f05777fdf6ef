package reconcile

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// postReader is the body of a lab post as its parser reads it: at most
// MaxInputBytes, and only UTF-8, both checked as the bytes arrive, so
// that a parser can stream the body instead of holding it whole. A
// character cut between two reads is held back until its end arrives:
// the parser never sees a byte of a sequence that is not UTF-8
// (encoding/json would replace one inside a string without a word, and
// an id that does not round-trip can never match). The bytes before a
// refusal are read first, so that a parser meets the body's problems in
// their order, however its reads are cut. Every refusal is a
// *RecordError; any other error is the body's own read error.
type postReader struct {
	r     io.Reader // the body, limited to one byte past MaxInputBytes
	size  int64     // bytes read from the body so far
	held  [utf8.UTFMax - 1]byte
	nheld int   // held[:nheld] starts a character whose end is yet to come
	err   error // once set, every later read returns it
}

func newPostReader(r io.Reader) *postReader {
	return &postReader{r: io.LimitReader(r, MaxInputBytes+1)}
}

func (p *postReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if len(b) < utf8.UTFMax {
		return 0, io.ErrShortBuffer // no room for a held character and its end
	}
	held := copy(b, p.held[:p.nheld])
	p.nheld = 0
	start := p.size - int64(held) // the body's offset of b[0]
	m, err := p.r.Read(b[held:])
	p.size += int64(m)
	n := held + m
	if p.size > MaxInputBytes {
		n-- // the byte past the limit
		err = &RecordError{Index: -1, Reason: "larger than " + strconv.Itoa(MaxInputBytes) + " bytes", class: classTooLarge}
	}
	complete := n
	if err != io.EOF {
		complete -= partialTail(b[:n]) // its end may come with the next read
	}
	if !utf8.Valid(b[:complete]) {
		complete = firstInvalid(b[:complete])
		err = &RecordError{Index: -1, Reason: "not valid UTF-8 at byte " + strconv.FormatInt(start+int64(complete), 10)}
	}
	switch {
	case err == nil:
		p.nheld = copy(p.held[:], b[complete:n])
	case err != io.EOF:
		p.err = err
		if complete > 0 {
			return complete, nil // the refusal comes with the next read
		}
	}
	return complete, err
}

// partialTail is the length of the character b ends in the middle of:
// 0 when b ends with a whole character (or with bytes that are no
// character's start, which utf8.Valid then refuses).
func partialTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// firstInvalid is the offset of the first byte of b that starts no
// UTF-8 character.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}
