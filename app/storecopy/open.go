package storecopy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/labstore/pglab"
	"ramanserve/evidence/predlog/pglog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/registry/filestore"
	"ramanserve/registry/pgstore"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/jobs/pgjobs"
)

// ErrServerRunning means the source registry directory is open in a
// server (or another copy): its lock is held.
var ErrServerRunning = errors.New("the registry directory is in use: stop the server first")

// jobsFolder is the jobs' folder in a registry directory
// (registry.Registry.JobsDir).
const jobsFolder = "jobs"

// Embedded is the embedded store of a registry directory opened as a copy's
// source. Close releases it.
type Embedded struct {
	Stores
	closers []func() error
}

// OpenEmbedded opens the embedded store in dir for reading, the way the
// server opens it, registry lock first: while a server holds the
// directory, it fails with ErrServerRunning, having read nothing. A part
// the directory does not have (no jobs/ folder, no predictions.db, no
// lab-results.db) is left nil rather than created: a copy's source is
// not written to.
func OpenEmbedded(ctx context.Context, dir string) (*Embedded, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("no registry directory at %s", dir)
	}
	files, err := filestore.Open(dir)
	if errors.Is(err, filestore.ErrLocked) {
		return nil, fmt.Errorf("%w: %w", ErrServerRunning, err)
	}
	if err != nil {
		return nil, err
	}
	e := &Embedded{Stores: Stores{Index: files, Artifacts: files}, closers: []func() error{files.Close}}
	if err := e.openEvidence(ctx, files.Dir()); err != nil {
		e.Close()
		return nil, err
	}
	if exists(filepath.Join(files.Dir(), jobsFolder)) {
		jf, err := jobfiles.Open(filepath.Join(files.Dir(), jobsFolder), nil)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.Jobs, e.Uploads = jf, jf
	}
	return e, nil
}

// openEvidence opens the prediction log and the lab results of dir, those
// it has.
func (e *Embedded) openEvidence(ctx context.Context, dir string) error {
	if exists(filepath.Join(dir, sqlitelog.DatabaseFileName)) {
		log, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
		if errors.Is(err, sqlitelog.ErrLocked) {
			return fmt.Errorf("%w: %w", ErrServerRunning, err)
		}
		if err != nil {
			return err
		}
		e.Log = log
		e.closers = append(e.closers, func() error { return log.Close(context.Background()) })
	}
	if exists(filepath.Join(dir, labstore.FileName)) {
		lab, err := labstore.Open(ctx, dir)
		if err != nil {
			return err
		}
		e.Lab, e.References = lab, lab.References()
		e.closers = append(e.closers, lab.Close)
	}
	return nil
}

// Close releases what OpenEmbedded opened, the registry's lock last.
func (e *Embedded) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Fleet returns the stores of a fleet's database, as a copy's target, on
// pool, whose schema pgdb.Open has migrated. The stores do not own the
// pool. Its prediction log records are stored as written by the replica
// "store-copy".
func Fleet(pool *pgxpool.Pool) (*Stores, error) {
	log, err := pglog.New(pool, pglog.Options{Replica: "store-copy"})
	if err != nil {
		return nil, err
	}
	jobStore := pgjobs.New(pool)
	return &Stores{
		Index:      pgstore.NewIndex(pool),
		Artifacts:  pgstore.NewArtifacts(pool, pgstore.ArtifactOptions{}),
		Jobs:       jobStore,
		Uploads:    jobStore,
		Log:        log,
		Lab:        pglab.New(pool),
		References: pglab.NewReferences(pool),
	}, nil
}
