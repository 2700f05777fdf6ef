package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"sync/atomic"
)

// Errors of Authenticate. ErrNoToken: the request has no bearer token
// (no Authorization header, another scheme, an empty or malformed one).
// ErrUnknownToken: it has one, and no entry matches it.
var (
	ErrNoToken      = errors.New("no bearer token")
	ErrUnknownToken = errors.New("unknown bearer token")
)

// Store holds the token set in force. Reads never lock; Swap replaces the
// whole set at once, so a request sees the old set or the new one, never
// a mix.
type Store struct {
	set atomic.Pointer[Set]
}

// NewStore returns a store holding s.
func NewStore(s *Set) *Store {
	st := &Store{}
	st.set.Store(s)
	return st
}

// Swap puts s in force.
func (st *Store) Swap(s *Set) { st.set.Store(s) }

// Len is the number of tokens in force.
func (st *Store) Len() int { return st.set.Load().Len() }

// Authenticate checks an Authorization header value ("Bearer <token>")
// against the set in force.
func (st *Store) Authenticate(authorization string) (Identity, error) {
	token, ok := bearerToken(authorization)
	if !ok {
		return Identity{}, ErrNoToken
	}
	return st.set.Load().lookup(sha256.Sum256([]byte(token)))
}

// ErrWrongUser: a user name and password (OPC UA) where the password is
// no token of that name.
var ErrWrongUser = errors.New("unknown user name or password")

// Login checks a user name and password, as OPC UA sends them: the
// password is a token of the set and the name is that token's name. It
// answers ErrWrongUser alike for an unknown token and a wrong name, and
// takes the same time for both.
func (st *Store) Login(name, password string) (Identity, error) {
	if len(password) > maxTokenLen {
		return Identity{}, ErrWrongUser
	}
	id, err := st.set.Load().lookup(sha256.Sum256([]byte(password)))
	nameOK := subtle.ConstantTimeCompare([]byte(id.Name), []byte(name)) == 1
	if err != nil || !nameOK {
		return Identity{}, ErrWrongUser
	}
	return id, nil
}

// lookup finds the entry of hash. Every entry is compared, in constant
// time, whatever matched before: the time taken depends on the number of
// entries only, never on which one (if any) matched or on how many bytes
// of a hash agreed.
func (s *Set) lookup(hash [sha256.Size]byte) (Identity, error) {
	found := -1
	for i := range s.entries {
		eq := subtle.ConstantTimeCompare(hash[:], s.entries[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Identity{}, ErrUnknownToken
	}
	e := &s.entries[found]
	return Identity{Name: e.name, Role: e.role}, nil
}

// maxTokenLen bounds the token hashed; the header itself is bounded by the
// HTTP server's header limit.
const maxTokenLen = 4096

// bearerToken is the token of "Bearer <token>" (RFC 6750 section 2.1: the
// scheme in any case, one or more spaces, a token of b64token characters).
func bearerToken(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token := strings.TrimLeft(rest, " ")
	if token == "" || len(token) > maxTokenLen {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if !b64tokenChar(token[i]) {
			return "", false
		}
	}
	return token, true
}

// b64tokenChar: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" / "="
// (RFC 6750's b64token; "=" is only allowed at the end there, which does
// not matter for a lookup by hash).
func b64tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0
}
