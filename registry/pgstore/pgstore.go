// Package pgstore keeps the registry's record in PostgreSQL, so that the
// replicas of a fleet share one registry: IndexStore is store.IndexStore
// and ArtifactStore is store.ArtifactStore, both on a pool that
// platform/pgdb opened (and migrated: the tables are in
// platform/pgdb/migrations/00002_registry.sql).
//
// The index is one row, replaced by each commit under a compare-and-swap
// on its revision; the commit notifies NotifyChannel, so that the other
// replicas learn of it without polling. The artifacts are rows of chunks,
// written in the transaction that names them, so a Put is all or nothing
// without any clean-up after a crash.
//
// Neither store holds anything that needs closing: the pool is the
// caller's, and each opened artifact is closed by its reader.
package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"ramanserve/platform/pgdb"
	"ramanserve/registry/store"
)

// NotifyChannel is the LISTEN/NOTIFY channel on which every index commit
// announces its new revision (the payload, in decimal), in the commit's
// own transaction: a listener is told only of commits that happened.
const NotifyChannel = "ramanserve_registry"

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// dbError wraps a failure of the database with store.ErrRegistry, so the
// server answers it as its storage failing, and names what was being
// done. A context that ended is the caller's doing, not the storage's: it
// is returned as it is (still wrapped for errors.Is).
func dbError(doing string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return fmt.Errorf("%w: %s: %w", store.ErrRegistry, doing, pgdb.Classify(pgdb.Explain(err)))
}

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == uniqueViolation
}

// rollback ends tx if it is still open. It runs even when ctx has ended
// (a transaction left open would hold its locks until the pool drops the
// connection), and its error is of no use: the caller returns the one
// that made it roll back, and after a commit it is pgx.ErrTxClosed.
func rollback(ctx context.Context, tx pgx.Tx) {
	_ = tx.Rollback(context.WithoutCancel(ctx))
}
