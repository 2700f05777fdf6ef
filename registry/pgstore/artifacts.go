package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/registry/store"
)

// ArtifactOptions configure an ArtifactStore; the zero value is usable.
type ArtifactOptions struct {
	// CacheDir holds the local copies of opened artifacts (os.TempDir()
	// when ""). It is created when missing, and each copy is unlinked as
	// soon as it is created, so nothing is left in it after a crash and
	// removing it at any time breaks nothing.
	CacheDir string
	// ChunkBytes is the size of the chunks content is stored in (1 MiB
	// when 0): the most one statement carries, and the most Put holds in
	// memory.
	ChunkBytes int
	// MemoryBytes is the largest artifact Open keeps in memory rather
	// than in a cache file (1 MiB when 0; -1 for always a file).
	MemoryBytes int64
}

const defaultChunkBytes = 1 << 20

// ArtifactStore is store.ArtifactStore on the registry_artifacts,
// registry_artifact_chunks and registry_sidecars tables.
type ArtifactStore struct {
	pool *pgxpool.Pool
	opts ArtifactOptions
}

var _ store.ArtifactStore = (*ArtifactStore)(nil)

// NewArtifacts returns the artifact store on pool, whose schema pgdb.Open
// has migrated.
func NewArtifacts(pool *pgxpool.Pool, opts ArtifactOptions) *ArtifactStore {
	if opts.CacheDir == "" {
		opts.CacheDir = os.TempDir()
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = defaultChunkBytes
	}
	if opts.MemoryBytes == 0 {
		opts.MemoryBytes = defaultChunkBytes
	}
	return &ArtifactStore{pool: pool, opts: opts}
}

// checkName refuses what is not an artifact name, so that every row is
// named as the file store names its files and an index moves between the
// stores unchanged.
func checkName(name string) error {
	if !store.ValidArtifactName(name) {
		return fmt.Errorf("%q is not a model artifact name (%s/<file>.npz or .joblib)", name, store.ModelsDir)
	}
	return nil
}

// Put stores the content write writes under name, in one transaction:
// the chunks as they come, then the row that names them, which fails if
// another artifact took the name meanwhile (see store.ArtifactStore).
// One transaction makes a failed or interrupted Put (even a crash) leave
// nothing to clean up; the price is that Put holds one of the pool's
// connections for as long as write runs.
func (s *ArtifactStore) Put(ctx context.Context, name string, write func(io.Writer) error) (int64, string, error) {
	if err := checkName(name); err != nil {
		return 0, "", err
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	// Before writing what would be refused anyway; the insert below is
	// what keeps a racing Put out.
	if err := s.refuseTaken(ctx, name); err != nil {
		return 0, "", err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, "", dbError("begin the put of "+name, err)
	}
	defer rollback(ctx, tx)
	var id int64
	if err := tx.QueryRow(ctx, `SELECT nextval('registry_artifact_ids')`).Scan(&id); err != nil {
		return 0, "", dbError("number the artifact "+name, err)
	}
	cw := newChunkWriter(ctx, tx, id, s.opts.ChunkBytes)
	if err := write(cw); err != nil {
		return 0, "", err
	}
	size, sum, err := cw.finish()
	if err != nil {
		return 0, "", err
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO registry_artifacts (id, name, size_bytes, sha256) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) WHERE quarantined_at IS NULL DO NOTHING`, id, name, size, sum)
	if err != nil {
		return 0, "", dbError("record the artifact "+name, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, "", fmt.Errorf("%w: %s", store.ErrArtifactExists, name)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, "", dbError("commit the artifact "+name, err)
	}
	return size, sum, nil
}

// refuseTaken returns store.ErrArtifactExists when name has an artifact.
func (s *ArtifactStore) refuseTaken(ctx context.Context, name string) error {
	var taken bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM registry_artifacts WHERE name = $1 AND quarantined_at IS NULL)`, name).Scan(&taken)
	if err != nil {
		return dbError("look up the artifact "+name, err)
	}
	if taken {
		return fmt.Errorf("%w: %s", store.ErrArtifactExists, name)
	}
	return nil
}

func hasSidecar(name string) bool { return path.Ext(name) == ".joblib" }

// PutSidecar stores the sidecar of the .joblib artifact name, unless name
// has an artifact or a sidecar already (store.ErrArtifactExists).
func (s *ArtifactStore) PutSidecar(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if !hasSidecar(name) {
		return fmt.Errorf("%s: only a .joblib artifact has a sidecar", name)
	}
	if len(data) > store.MaxSidecarBytes {
		return fmt.Errorf("the sidecar of %s is %d bytes, over %d", name, len(data), store.MaxSidecarBytes)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO registry_sidecars (name, data)
		SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM registry_artifacts WHERE name = $1 AND quarantined_at IS NULL)
		ON CONFLICT (name) DO NOTHING`, name, data)
	if err != nil {
		return dbError("store the sidecar of "+name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s has an artifact or a sidecar", store.ErrArtifactExists, name)
	}
	return nil
}

// ReadSidecar returns the sidecar of name (see store.ArtifactStore).
func (s *ArtifactStore) ReadSidecar(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM registry_sidecars WHERE name = $1`, name).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: no sidecar for %s", store.ErrArtifactNotFound, name)
	}
	if err != nil {
		return nil, dbError("read the sidecar of "+name, err)
	}
	if len(data) > store.MaxSidecarBytes {
		return nil, fmt.Errorf("%w: the sidecar of %s is %d bytes, over %d", store.ErrArtifactCorrupt, name, len(data), store.MaxSidecarBytes)
	}
	return data, nil
}

// Delete removes the artifact name and its sidecar if its content (read
// back, not the size and checksum Put recorded) still matches want.
func (s *ArtifactStore) Delete(ctx context.Context, name string, want store.Fingerprint) error {
	if err := checkName(name); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return dbError("begin the delete of "+name, err)
	}
	defer rollback(ctx, tx)
	// FOR UPDATE: a racing Delete or Quarantine of the name waits, then
	// finds nothing.
	var id int64
	err = tx.QueryRow(ctx, `SELECT id FROM registry_artifacts WHERE name = $1 AND quarantined_at IS NULL FOR UPDATE`, name).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		id = 0
	case err != nil:
		return dbError("look up the artifact "+name, err)
	default:
		if err := checkUnchanged(ctx, tx, id, name, want); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM registry_artifacts WHERE id = $1`, id); err != nil {
			return dbError("delete the artifact "+name, err)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM registry_sidecars WHERE name = $1`, name); err != nil {
		return dbError("delete the sidecar of "+name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return dbError("commit the delete of "+name, err)
	}
	return nil
}

// checkUnchanged returns store.ErrArtifactChanged unless the content of
// artifact id has want's size and, when want records one, its checksum.
func checkUnchanged(ctx context.Context, q querier, id int64, name string, want store.Fingerprint) error {
	// Read one byte past the size wanted: enough to tell that it differs.
	size, sum, err := copyContent(ctx, q, id, io.Discard, want.SizeBytes+1)
	if err != nil {
		return fmt.Errorf("check %s before deleting it: %w", name, err)
	}
	if size != want.SizeBytes || (want.SHA256 != "" && sum != want.SHA256) {
		return fmt.Errorf("%w: %s is no longer %d bytes with sha256 %q; left in place", store.ErrArtifactChanged, name, want.SizeBytes, want.SHA256)
	}
	return nil
}

// List returns the artifacts in service, sorted by name byte by byte (as
// Go sorts, whatever the database's collation).
func (s *ArtifactStore) List(ctx context.Context) ([]store.ArtifactInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, stored_at FROM registry_artifacts
		WHERE quarantined_at IS NULL ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, dbError("list the artifacts", err)
	}
	infos, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ArtifactInfo, error) {
		var info store.ArtifactInfo
		var storedAt time.Time
		err := row.Scan(&info.Name, &storedAt)
		info.Readable, info.ModTime = true, storedAt
		return info, err
	})
	if err != nil {
		return nil, dbError("list the artifacts", err)
	}
	return infos, nil
}

// Quarantine takes the artifact name out of service, keeping its row,
// chunks and sidecar with the reason; the name is then free.
func (s *ArtifactStore) Quarantine(ctx context.Context, name, reason string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", dbError("begin the quarantine of "+name, err)
	}
	defer rollback(ctx, tx)
	var id int64
	err = tx.QueryRow(ctx, `UPDATE registry_artifacts
		SET quarantined_at = now(), quarantine_reason = $2,
			quarantined_sidecar = (SELECT data FROM registry_sidecars WHERE name = $1)
		WHERE name = $1 AND quarantined_at IS NULL
		RETURNING id`, name, reason).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: %s", store.ErrArtifactNotFound, name)
	}
	if err != nil {
		return "", dbError("quarantine the artifact "+name, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM registry_sidecars WHERE name = $1`, name); err != nil {
		return "", dbError("quarantine the sidecar of "+name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", dbError("commit the quarantine of "+name, err)
	}
	return quarantineName(id, name), nil
}

// quarantineName is where Quarantine reports the artifact id kept: its
// row's id, so that every artifact quarantined under one name is told
// apart, in the file store's form ("quarantine/<file>").
func quarantineName(id int64, name string) string {
	return fmt.Sprintf("quarantine/%d-%s", id, path.Base(name))
}

// Quarantined lists the artifacts set aside, oldest first, until an
// operator deletes their rows.
func (s *ArtifactStore) Quarantined(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name FROM registry_artifacts WHERE quarantined_at IS NOT NULL ORDER BY id`)
	if err != nil {
		return nil, dbError("list the quarantine", err)
	}
	kept, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var id int64
		var name string
		err := row.Scan(&id, &name)
		return quarantineName(id, name), err
	})
	if err != nil {
		return nil, dbError("list the quarantine", err)
	}
	return kept, nil
}
