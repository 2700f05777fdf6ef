// Package auth is bearer-token authentication of the management channel:
// the tokens file (-auth-tokens), an immutable set of token hashes read
// from it, a store that swaps sets atomically on reload (SIGHUP), and the
// constant-time check of a request's Authorization header against it.
//
// Only SHA-256 hashes of tokens are held: the file holds no token, and a
// token a client sends is hashed and dropped. Nothing here logs.
package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"ramanserve/server/configfile"
)

// Role is what a token may do.
type Role string

// Roles: read may call every GET (and HEAD and OPTIONS); operate may call
// everything, the mutations too.
const (
	Read    Role = "read"
	Operate Role = "operate"
)

// Allows reports whether r may use method. Read is limited to the safe
// methods (RFC 9110 section 9.2.1), which change nothing on this server.
func (r Role) Allows(method string) bool {
	switch r {
	case Operate:
		return true
	case Read:
		return method == "GET" || method == "HEAD" || method == "OPTIONS"
	}
	return false
}

// FileLine is token's line in a tokens file, "role sha256(token) name"
// and a newline, for the tools and tests that write such files.
func FileLine(role Role, token, name string) string {
	sum := sha256.Sum256([]byte(token))
	return string(role) + " " + hex.EncodeToString(sum[:]) + " " + name + "\n"
}

// Identity is who a request authenticated as: the token's name and role.
type Identity struct {
	Name string
	Role Role
}

// Bounds of the tokens file: what a file (an operator's mistake, a log
// pointed at by accident) can make the server allocate.
const (
	MaxFileBytes = 1 << 20
	MaxLineBytes = 1024
	MaxTokens    = 10000
	MaxNameLen   = 64
)

// entry is one token of a set: its hash, name and role.
type entry struct {
	hash [sha256.Size]byte
	name string
	role Role
}

// Set is an immutable set of tokens, as one tokens file lists them.
type Set struct {
	entries []entry
}

// Len is the number of tokens in s.
func (s *Set) Len() int { return len(s.entries) }

// LineError is a tokens file that does not parse: the line and why. It
// never quotes the line: an operator who pasted a token where its hash
// belongs must not find it in the log.
type LineError struct {
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// ReloadQuiet is how long the tokens file must have gone unmodified
// before a reload takes it as read; one modified more recently is read
// again after ReloadQuiet, and taken only if it did not change meanwhile
// (configfile.ReadSettled). It is what a script or an editor rewriting the
// file in place, in one go, needs to finish.
const ReloadQuiet = time.Second

// ReadFile reads and parses the tokens file at path, at start. A FIFO, a
// device or a directory is refused at once (configfile): a wrong path
// must fail a start or a reload, not block it. So is a file others may
// write: any local user could add a token of their own.
func ReadFile(path string) (*Set, error) {
	return readFile(context.Background(), path, configfile.Settle{})
}

// ReloadFile is ReadFile on SIGHUP, when a set is in force and is kept
// unless the new file is whole: a file modified within ReloadQuiet is
// read until it stops changing (see ReadFile and checkWhole for the
// rest). A file still changing, or cut mid-line, is an error; only a new
// file renamed over the old one is sure to be read whole, which is what
// operators are told to do.
func ReloadFile(ctx context.Context, path string) (*Set, error) {
	return readFile(ctx, path, configfile.Settle{Quiet: ReloadQuiet})
}

func readFile(ctx context.Context, path string, settle configfile.Settle) (*Set, error) {
	data, err := configfile.ReadSettled(ctx, path, MaxFileBytes, configfile.Trusted, settle)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if err := checkWhole(data); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	s, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return s, nil
}

// ErrNotWhole is a tokens file that does not end with a newline: a write
// cut short, whose last line may be a prefix of the one meant (a name
// cut short parses as another name).
var ErrNotWhole = errors.New("does not end with a newline: it may be half-written (write a new file, then rename it over this one)")

// checkWhole refuses a file whose last line has no newline. Every line a
// tool writes (FileLine, echo, an editor) ends with one, so a file
// without it is one caught in the middle of a write.
func checkWhole(data []byte) error {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return ErrNotWhole
	}
	return nil
}

// Parse reads a tokens file: one token per line, "role sha256hex name",
// fields separated by spaces or tabs; "#" starts a comment, blank lines
// are skipped. It is strict: an unknown role, a hash that is not 64 hex
// digits, a repeated hash or name, a name with other characters than
// letters, digits and "-._@:", a line over MaxLineBytes, a file over
// MaxFileBytes or MaxTokens, and a file with no token at all are errors
// (a file truncated mid-write must not lock everyone out on reload).
func Parse(r io.Reader) (*Set, error) {
	limited := &io.LimitedReader{R: r, N: MaxFileBytes + 1}
	sc := bufio.NewScanner(limited)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes+1)
	var (
		s      Set
		hashes = map[[sha256.Size]byte]int{}
		names  = map[string]int{}
		line   int
	)
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(raw) > MaxLineBytes {
			return nil, &LineError{line, fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		e, ok, err := parseLine(raw)
		if err != nil {
			return nil, &LineError{line, err.Error()}
		}
		if !ok {
			continue
		}
		if prev, dup := hashes[e.hash]; dup {
			return nil, &LineError{line, fmt.Sprintf("the same hash as line %d (one token, one name)", prev)}
		}
		if prev, dup := names[e.name]; dup {
			return nil, &LineError{line, fmt.Sprintf("name %q already used on line %d", e.name, prev)}
		}
		if len(s.entries) == MaxTokens {
			return nil, &LineError{line, fmt.Sprintf("more than %d tokens", MaxTokens)}
		}
		hashes[e.hash], names[e.name] = line, line
		s.entries = append(s.entries, e)
	}
	if limited.N == 0 {
		return nil, fmt.Errorf("over %d bytes", MaxFileBytes)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{line + 1, fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		return nil, err
	}
	if len(s.entries) == 0 {
		return nil, errors.New("no token in the file (every request would be refused)")
	}
	return &s, nil
}

// parseLine parses one line; ok is false for a blank or comment line.
func parseLine(raw []byte) (e entry, ok bool, err error) {
	if i := bytes.IndexByte(raw, '#'); i >= 0 {
		raw = raw[:i]
	}
	fields := strings.FieldsFunc(string(raw), func(c rune) bool { return c == ' ' || c == '\t' || c == '\r' })
	switch {
	case len(fields) == 0:
		return entry{}, false, nil
	case len(fields) != 3:
		return entry{}, false, fmt.Errorf("%d fields, want 3: role sha256(token) name", len(fields))
	}
	role := Role(fields[0])
	if role != Read && role != Operate {
		// Not quoted: on a line written in the wrong order it could be the token.
		return entry{}, false, errors.New("unknown role in field 1 (want read or operate)")
	}
	h := fields[1]
	if len(h) != 2*sha256.Size {
		return entry{}, false, fmt.Errorf("field 2 has %d characters; want the 64 hex digits of sha256(token), never the token itself", len(h))
	}
	if _, err := hex.Decode(e.hash[:], []byte(h)); err != nil {
		return entry{}, false, errors.New("field 2 is not hex; want the 64 hex digits of sha256(token)")
	}
	if err := checkName(fields[2]); err != nil {
		return entry{}, false, err
	}
	e.name, e.role = fields[2], role
	return e, true, nil
}

// checkName keeps names fit for logs, job records and JSON: 1 to
// MaxNameLen letters, digits and "-._@:".
func checkName(n string) error {
	if len(n) > MaxNameLen {
		return fmt.Errorf("name longer than %d characters", MaxNameLen)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._@:", c) >= 0) {
			return fmt.Errorf("name has character %q (want letters, digits and -._@:)", c)
		}
	}
	return nil
}
