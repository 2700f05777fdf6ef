package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// ArtifactStore keeps the model artifacts: the bytes of each model, by
// artifact name (ValidArtifactName), and for a .joblib artifact an
// optional sidecar (the JSON notes an import came with).
//
// Guarantees every implementation gives (registry/storetest checks them):
//
//   - Put never replaces: it stores what write writes under a name that
//     holds no artifact, or fails with ErrArtifactExists and leaves the
//     artifact there as it was. It is atomic (nothing is listed or opened
//     under the name until the whole content is stored, and a failed or
//     interrupted Put leaves no artifact) and durable on return. It
//     returns the content's size and hex SHA-256.
//   - Open hands out an artifact only after checking the bytes it serves
//     against want: a size or checksum that differs, or content the store
//     will not read, is ErrArtifactCorrupt; a name with no artifact is
//     ErrArtifactNotFound. The bytes checked are the bytes read: deleting,
//     quarantining or replacing the artifact after Open does not change
//     what the opened artifact reads.
//   - Delete removes an artifact (and its sidecar) only while it still has
//     want's size and checksum; any other content is left in place and
//     reported as ErrArtifactChanged. A name with no artifact is not an
//     error (a sidecar left alone under it is removed).
//   - List names every artifact, readable or not, and nothing else.
//   - Quarantine takes an artifact (and its sidecar) out of the store's
//     artifacts, keeping its bytes and the reason for the operator; it
//     never deletes nor overwrites anything.
//   - Artifacts survive a restart: a reopened store lists, opens and
//     deletes what was put before.
//
// Every method is safe for concurrent use; Puts of different names do
// not interfere.
type ArtifactStore interface {
	// Put stores a new artifact under name, its content written by write.
	Put(ctx context.Context, name string, write func(io.Writer) error) (size int64, sha256 string, err error)
	// PutSidecar stores the sidecar of the .joblib artifact name, before
	// the artifact is put: it fails with ErrArtifactExists when name
	// already has an artifact or a sidecar. data is at most
	// MaxSidecarBytes.
	PutSidecar(ctx context.Context, name string, data []byte) error
	// Open returns the artifact's content, checked against want. When
	// want records no size, the artifact must be at most maxBytes.
	Open(ctx context.Context, name string, want Fingerprint, maxBytes int64) (Artifact, error)
	// ReadSidecar returns the sidecar of name; ErrArtifactNotFound when
	// there is none, ErrArtifactCorrupt when it cannot be read or is over
	// MaxSidecarBytes.
	ReadSidecar(ctx context.Context, name string) ([]byte, error)
	// Delete removes the artifact name and its sidecar if the artifact
	// still has want's size and checksum.
	Delete(ctx context.Context, name string, want Fingerprint) error
	// List returns every artifact, sorted by name.
	List(ctx context.Context) ([]ArtifactInfo, error)
	// Quarantine sets the artifact name aside with the reason, and
	// returns where it is kept (in the file store, "quarantine/<file>").
	Quarantine(ctx context.Context, name, reason string) (string, error)
	// Quarantined lists the artifacts set aside, as Quarantine named them,
	// until an operator removes them.
	Quarantined(ctx context.Context) ([]string, error)
}

// MaxSidecarBytes bounds an artifact's sidecar.
const MaxSidecarBytes = 1 << 20

// Fingerprint is the size and hex SHA-256 an artifact was recorded with.
// A zero SizeBytes with an empty SHA256 records no size (an entry from
// before sizes were kept); an empty SHA256 records no checksum, and then
// the size alone is checked.
type Fingerprint struct {
	SizeBytes int64
	SHA256    string
}

// Artifact is an artifact opened for reading: its content at any offset,
// already checked against the fingerprint it was opened with. The caller
// closes it.
type Artifact interface {
	io.ReaderAt
	// Size is the length of the content.
	Size() int64
	// SHA256 is the hex SHA-256 of the content, computed by Open.
	SHA256() string
	Close() error
}

// ArtifactInfo describes one stored artifact.
type ArtifactInfo struct {
	Name string
	// Readable is false for an artifact the store will never open (in the
	// file store: a symbolic link or a special file in models/).
	Readable bool
	// ModTime is when the content was stored.
	ModTime time.Time
}

// ErrArtifactNotFound means the store has no artifact (or sidecar) of
// that name.
var ErrArtifactNotFound = errors.New("no such model artifact")

// ErrArtifactExists means a Put named an artifact the store already has;
// nothing was replaced.
var ErrArtifactExists = errors.New("the model artifact already exists")

// ErrArtifactCorrupt means an artifact's content is not what was recorded
// (another size or checksum) or cannot be read at all.
var ErrArtifactCorrupt = errors.New("the model artifact is not the one recorded")

// ErrArtifactChanged means a delete found other content than the one it
// was asked to remove; the content was left in place.
var ErrArtifactChanged = errors.New("the model artifact changed since it was recorded")
