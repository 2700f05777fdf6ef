package jobs

import (
	"context"
	"errors"
	"time"
)

// KeyRecord is what an idempotency key of a training upload holds: the
// digest of the request that first used it and the job that request
// created.
type KeyRecord struct {
	Key         string
	RequestHash string // hex SHA-256 of the request as received
	JobID       string
	CreatedAt   time.Time
}

// KeyLimits bound what a KeyStore keeps.
type KeyLimits struct {
	// TTL: a record older than this is gone (a claim of its key succeeds).
	TTL time.Duration
	// Max: at most this many records are kept; beyond it the oldest go.
	Max int
}

// DefaultKeyLimits are the contract's: a key is kept for 24 h, and at
// most 10,000 keys are.
func DefaultKeyLimits() KeyLimits { return KeyLimits{TTL: 24 * time.Hour, Max: 10000} }

// MaxKeyBytes bounds a key: the contract allows 1 to 255 characters of
// printable ASCII.
const MaxKeyBytes = 255

// KeyStore keeps the idempotency keys of training uploads, across a
// restart and, in a fleet, shared by every replica. Implementations are
// safe for concurrent use; jobstoretest.RunKeyStore is their contract.
type KeyStore interface {
	// ClaimKey records rec under rec.Key unless a record of that key
	// created after rec.CreatedAt - limits.TTL exists. It returns the
	// record held after the call, and whether that is rec: of several
	// claims of one key at once, here or by other processes on the same
	// storage, at most one is claimed. Records older than the TTL, and
	// beyond limits.Max the oldest, are dropped.
	ClaimKey(ctx context.Context, rec KeyRecord, limits KeyLimits) (held KeyRecord, claimed bool, err error)
	// ForgetKey removes key's record when it names jobID (a claim whose job
	// was never recorded); forgetting nothing is no error.
	ForgetKey(ctx context.Context, key, jobID string) error
}

// Errors of idempotency keys; server/contract maps them.
var (
	// ErrKeyReused: the key was used for a request with another body.
	ErrKeyReused = errors.New("idempotency key already used for another request")
	// ErrKeyInUse: another request holds the key and has not recorded
	// its job yet.
	ErrKeyInUse = errors.New("idempotency key held by a request in progress")
)

// ValidKey reports whether k is a key the contract allows: 1 to
// MaxKeyBytes characters of printable ASCII without space.
func ValidKey(k string) bool {
	if k == "" || len(k) > MaxKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '!' || k[i] > '~' {
			return false
		}
	}
	return true
}
