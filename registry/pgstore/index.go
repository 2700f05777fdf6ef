package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
)

// maxIndexBytes bounds the index this store writes and reads: the file
// store's bound, so that an index moves between the two stores either way.
const maxIndexBytes = filestore.MaxIndexBytes

// IndexStore is store.IndexStore on the registry_index table.
type IndexStore struct {
	pool *pgxpool.Pool
}

var _ store.IndexStore = (*IndexStore)(nil)

// NewIndex returns the index store on pool, whose schema pgdb.Open has
// migrated.
func NewIndex(pool *pgxpool.Pool) *IndexStore { return &IndexStore{pool: pool} }

// encodedIndex is an index as the row keeps it: the pointers as text, the
// entries and removals as JSON in their own encoding (store.Entry's and
// store.Removal's field tags, the file store's too).
type encodedIndex struct {
	active, shadow   string
	models, removing json.RawMessage
}

func encodeIndex(ix *store.Index) (encodedIndex, error) {
	models, err := json.Marshal(ix.Models)
	if err != nil {
		return encodedIndex{}, fmt.Errorf("encode the index's models: %w", err)
	}
	removing, err := json.Marshal(ix.Removing)
	if err != nil {
		return encodedIndex{}, fmt.Errorf("encode the index's removals: %w", err)
	}
	if n := len(models) + len(removing); n > maxIndexBytes {
		return encodedIndex{}, fmt.Errorf("the index would be %d bytes, over the %d a store reads; remove versions (DELETE /model/{version}) first", n, maxIndexBytes)
	}
	return encodedIndex{active: ix.Active, shadow: ix.Shadow, models: models, removing: removing}, nil
}

// decode reads the row back, refusing (store.ErrIndexCorrupt) what fails
// Index.Validate: the row can be edited by hand, and the registry must
// never act on an index it could not have committed.
func (e encodedIndex) decode() (*store.Index, error) {
	if len(e.models)+len(e.removing) > maxIndexBytes {
		return nil, fmt.Errorf("%w: it is over %d bytes", store.ErrIndexCorrupt, maxIndexBytes)
	}
	ix := &store.Index{Active: e.active, Shadow: e.shadow}
	if err := json.Unmarshal(e.models, &ix.Models); err != nil {
		return nil, fmt.Errorf("%w: the models are not valid JSON: %v", store.ErrIndexCorrupt, err)
	}
	if err := json.Unmarshal(e.removing, &ix.Removing); err != nil {
		return nil, fmt.Errorf("%w: the removals are not valid JSON: %v", store.ErrIndexCorrupt, err)
	}
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	return ix, nil
}

// ReadIndex returns the committed index and its revision; an empty index
// and revision 0 before the first commit.
func (s *IndexStore) ReadIndex(ctx context.Context) (*store.Index, store.Revision, error) {
	var row encodedIndex
	var rev int64
	err := s.pool.QueryRow(ctx, `SELECT revision, active, shadow, models, removing FROM registry_index`).
		Scan(&rev, &row.active, &row.shadow, &row.models, &row.removing)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.NewIndex(), 0, nil
	}
	if err != nil {
		return nil, 0, dbError("read the registry index", err)
	}
	if rev <= 0 {
		return nil, 0, fmt.Errorf("%w: revision %d, which no commit hands out", store.ErrIndexCorrupt, rev)
	}
	ix, err := row.decode()
	if err != nil {
		return nil, 0, err
	}
	return ix, store.Revision(rev), nil
}

// CommitIndex replaces the index if its revision is still base, and
// notifies NotifyChannel, in one transaction (see store.IndexStore).
func (s *IndexStore) CommitIndex(ctx context.Context, base store.Revision, next *store.Index) (store.Revision, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := next.Validate(); err != nil {
		return 0, err
	}
	row, err := encodeIndex(next)
	if err != nil {
		return 0, err
	}
	if base > math.MaxInt64 {
		return 0, fmt.Errorf("%w: based on revision %d, which this store never hands out", store.ErrConflict, base)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, dbError("begin the index commit", err)
	}
	defer rollback(ctx, tx)
	rev, err := swapIndex(ctx, tx, int64(base), row)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, strconv.FormatInt(rev, 10)); err != nil {
		return 0, dbError("notify the index commit", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, dbError("commit the registry index", err)
	}
	return store.Revision(rev), nil
}

// swapIndex writes row in tx if the recorded revision is base (0: no row
// yet) and returns the new revision, or store.ErrConflict. A concurrent
// commit on the same base holds the row (or its key) until it ends; this
// statement then sees the revision that commit wrote, and changes nothing.
func swapIndex(ctx context.Context, tx pgx.Tx, base int64, row encodedIndex) (int64, error) {
	query := `UPDATE registry_index
		SET revision = nextval('registry_index_revision'),
			active = @active, shadow = @shadow, models = @models, removing = @removing, committed_at = now()
		WHERE revision = @base
		RETURNING revision`
	if base == 0 {
		query = `INSERT INTO registry_index (revision, active, shadow, models, removing)
			VALUES (nextval('registry_index_revision'), @active, @shadow, @models, @removing)
			ON CONFLICT (singleton) DO NOTHING
			RETURNING revision`
	}
	args := pgx.NamedArgs{"active": row.active, "shadow": row.shadow, "models": row.models, "removing": row.removing, "base": base}
	var rev int64
	err := tx.QueryRow(ctx, query, args).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: the commit was based on revision %d", store.ErrConflict, base)
	}
	if err != nil {
		return 0, dbError("write the registry index", err)
	}
	return rev, nil
}
