package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
)

// OpenFunc turns a model artifact into a ready Model. content is the
// artifact's bytes, already checked against the size and checksum the
// entry recorded; it is valid only until OpenFunc returns, so a reader
// keeps nothing of it but what it parsed. Reading at any offset lets an
// .npz reader jump to its members instead of holding the file in memory.
// The entry gives the version and metadata the model must report.
type OpenFunc func(ctx context.Context, content *io.SectionReader, entry Entry) (inference.Model, error)

// Options configure a Registry.
type Options struct {
	// Openers maps a file extension (".npz", ".joblib") to its reader.
	Openers map[string]OpenFunc
	// AllowedRoots are the directories a file load may read from. Empty
	// means the registry's import/ folder.
	AllowedRoots []string
	// MaxImportBytes bounds the size of an imported file (default 512 MiB).
	MaxImportBytes int64
	Logger         *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Fleet, when set, is what the processes sharing the stores do
	// together (see Fleet): the lock a load, a delete or a shadow change
	// takes, and the revisions each serves. It also tells the registry
	// that other processes change the index, so it catches up with the
	// store before each such change. Nil: this process alone writes the
	// stores (the embedded store's directory lock sees to that).
	Fleet Fleet
}

// Registry is the model registry's rules over its stores, plus the
// active model.
type Registry struct {
	dir   string // the registry directory: the default import root, jobs/, temp names
	opts  Options
	roots []string // resolved allowed roots
	log   *slog.Logger

	active atomic.Pointer[activeModel]

	loadMu sync.Mutex // held for the whole of a load; TryLock gives LOAD_IN_PROGRESS
	// changing is set for the whole of a load, delete or shadow change in
	// a fleet, where loadMu is also held by catch-ups (see exclusive).
	changing atomic.Bool
	mu       sync.Mutex // guards ix, rev and the commits of the index
	index    IndexStore
	ix       *store.Index   // the index as last read or committed
	rev      store.Revision // the revision of ix

	artifacts ArtifactStore // the model files

	shadow     shadowState  // the shadow's model, follower and problem; guarded by mu
	restoreErr error        // set when the active model could not be restored at start-up; guarded by mu
	tag        tagCache     // the ETag of the state last asked; guarded by mu
	problems   []string     // what start-up could not fix, for health; guarded by mu
	closeStore func() error // closes the store Open built; nil for New, and once closed

	// deleteCommitted, when set (by the package's tests only), runs
	// between a delete's index write and its file removal: the crash
	// window the kill -9 test stops the process in.
	deleteCommitted func()
}

// activeModel is the model served, with the checksum of the artifact it
// was read from: a replica following another's swap compares the index's
// active entry with it, so that a version re-stored under the same name is
// opened again.
type activeModel struct {
	model  inference.Model
	sha256 string
}

// ReservedVersion reports whether v is a name the management routes use
// beside /model/{version} (POST /model/load, GET /model/list, GET
// /model/info, /model/shadow): no model is given one, so every version has
// its URL.
func ReservedVersion(v string) bool {
	return v == "load" || v == "list" || v == "info" || v == "shadow"
}

// Open opens (creating if needed) the registry in dir, its index and its
// model files kept by the file store (package registry/filestore), and
// restores the active
// model. Before it reads anything the store takes the directory's
// exclusive lock: a second process (or a second Open) fails at once with
// filestore.ErrLocked, naming the holder's PID, having changed nothing on
// disk. Then Open works as New. Close releases the lock.
func Open(ctx context.Context, dir string, opts Options) (*Registry, error) {
	files, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	r, err := New(ctx, files, files, files.Dir(), opts)
	if err != nil {
		files.Close()
		return nil, err
	}
	r.closeStore = files.Close
	return r, nil
}

// New builds the registry whose index idx keeps and whose model files
// arts keeps, over the registry directory dir, and restores the active
// model. It removes the temp files of interrupted writes in dir
// (atomicfile.TempPrefix names only), finishes the deletes a crash
// interrupted, adopts model files that have no index entry (archived) and
// quarantines those that cannot be read. A missing or empty index is
// rebuilt from the model files; a corrupt one (store.ErrIndexCorrupt)
// fails New with the repair command in the message, and nothing is
// changed.
//
// A model that fails to restore does not fail New: the server starts
// without a model and RestoreError reports why (health then reads
// degraded). The caller keeps the stores open while it uses the
// registry, and closes them after.
func New(ctx context.Context, idx IndexStore, arts ArtifactStore, dir string, opts Options) (*Registry, error) {
	r, err := newRegistry(idx, arts, dir, opts)
	if err != nil {
		return nil, err
	}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// newRegistry returns a registry over its stores with nothing read yet.
func newRegistry(idx IndexStore, arts ArtifactStore, dir string, opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxImportBytes <= 0 {
		opts.MaxImportBytes = 512 << 20
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("registry path %q: %w", dir, err)
	}
	return &Registry{dir: abs, opts: opts, log: opts.Logger, index: idx, artifacts: arts, ix: store.NewIndex()}, nil
}

// commit records next as the index, based on the revision the registry
// last read or committed; called with mu held. On success next is the
// registry's index; on failure nothing changes.
func (r *Registry) commit(ctx context.Context, next *store.Index) error {
	rev, err := r.index.CommitIndex(ctx, r.rev, next)
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrRegistry, err)
	}
	r.ix, r.rev = next, rev
	return nil
}

func (r *Registry) open(ctx context.Context) error {
	// The index first: a corrupt one stops everything before any write.
	ix, rev, err := r.index.ReadIndex(ctx)
	if errors.Is(err, store.ErrIndexCorrupt) {
		return fmt.Errorf("%w. Nothing in the registry was changed. Run `ramanserve registry check %s -repair` to set index.json aside and rebuild the list from the model files (every one is listed as archived)", err, r.dir)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrRegistry, err)
	}
	r.ix, r.rev = ix, rev
	for _, sub := range []string{filestore.ModelsDir, "import", "jobs"} {
		if err := os.MkdirAll(filepath.Join(r.dir, sub), 0o755); err != nil {
			return fmt.Errorf("create registry folder: %w", err)
		}
	}
	if err := r.resolveRoots(); err != nil {
		return err
	}
	r.sweepTemp()
	removed := r.finishRemovals(ctx)
	adopted := 0
	if r.opts.Fleet == nil {
		// Only a store this process alone writes has orphans to adopt: in
		// a fleet, an artifact without an entry may be another replica's
		// model between its Put and its index commit, and adopting it would
		// race that commit. The shared stores write both in transactions;
		// `ramanserve registry check -store` reports a true orphan.
		adopted = r.adoptOrphans(ctx)
	}
	if adopted > 0 || removed {
		if rev == 0 {
			r.log.Warn("the index was missing or empty: rebuilt from the model files, all archived", "models", adopted)
		}
		r.mu.Lock()
		err := r.commit(ctx, r.ix)
		r.mu.Unlock()
		if err != nil {
			// The adopted entries are served from memory and adopted
			// again at the next start; nothing is lost.
			r.log.Error("could not record adopted model files in the index", "err", err)
			r.addProblem("adopted model files could not be recorded in the index: " + err.Error())
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if r.ix.Active != "" {
		r.restoreActive(ctx)
	}
	if r.ix.Shadow != "" {
		r.restoreShadow(ctx)
	}
	if err := r.served(ctx, r.rev); err != nil {
		// Another replica's load waits for this one (ConvergeTimeout)
		// until the next catch-up records it.
		r.log.Warn("could not record the revision this replica serves", "err", err)
	}
	return nil
}

func (r *Registry) resolveRoots() error {
	roots := r.opts.AllowedRoots
	if len(roots) == 0 {
		roots = []string{filepath.Join(r.dir, "import")}
	}
	for _, root := range roots {
		resolved, err := filepath.EvalSymlinks(root)
		if err != nil {
			return fmt.Errorf("allowed file root %q: %w", root, err)
		}
		resolved, err = filepath.Abs(resolved)
		if err != nil {
			return fmt.Errorf("allowed file root %q: %w", root, err)
		}
		r.roots = append(r.roots, resolved)
	}
	return nil
}

// Close closes the store Open built (for the file store: releases the
// directory's lock); a registry from New leaves its store to the caller.
// Call it once nothing uses the registry any more (server shutdown); it is
// safe to call twice.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closeStore == nil {
		return nil
	}
	err := r.closeStore()
	r.closeStore = nil
	return err
}

func (r *Registry) restoreActive(ctx context.Context) {
	e, ok := r.ix.Models[r.ix.Active]
	if !ok {
		r.restoreErr = fmt.Errorf("active version %q is not in the index", r.ix.Active)
		return
	}
	m, err := r.openVerified(ctx, e)
	if err != nil {
		r.restoreErr = fmt.Errorf("restore active model %q: %w", e.Version, err)
		r.log.Error("active model not restored", "version", e.Version, "err", err)
		return
	}
	r.active.Store(&activeModel{model: m, sha256: e.SHA256})
	r.log.Info("active model restored", "version", e.Version)
}

// Dir is the registry directory (absolute).
func (r *Registry) Dir() string { return r.dir }

// JobsDir is where training job records live.
func (r *Registry) JobsDir() string { return filepath.Join(r.dir, "jobs") }

// RestoreError is non-nil when the model active before the last restart
// could not be restored.
func (r *Registry) RestoreError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restoreErr
}

// Active returns the active model, or nil when none is loaded. It is one
// atomic load and is safe on the hot path.
func (r *Registry) Active() inference.Model {
	if a := r.active.Load(); a != nil {
		return a.model
	}
	return nil
}

// probeBytes is the size of Writable's probe write: a page of real data,
// because creating an empty file succeeds on a full disk (it needs an
// inode, not a block).
const probeBytes = 4096

// Writable probes that the registry directory can take a write: it writes
// probeBytes to a temporary file, fsyncs it (a network file system may
// report a full disk or quota only then), and removes it. The error wraps
// store.ErrRegistry and the failing call's *os.PathError, so
// errors.Is finds the errno (ENOSPC, EROFS, EDQUOT).
func (r *Registry) Writable() error {
	f, err := os.CreateTemp(r.dir, atomicfile.TempPrefix+"probe-*")
	if err != nil {
		return fmt.Errorf("%w: registry not writable: %w", store.ErrRegistry, err)
	}
	name := f.Name()
	defer os.Remove(name)
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: registry not writable: %w", store.ErrRegistry, err)
	}
	return nil
}

// List returns the active version ("" when none is loaded) and every entry,
// sorted by TrainedAt descending, ties by version.
func (r *Registry) List() (active string, entries []Entry) {
	active, entries, _ = r.ListTagged()
	return active, entries
}

// ListTagged is List with the ETag of the state listed, read together.
func (r *Registry) ListTagged() (active string, entries []Entry, etag string) {
	r.mu.Lock()
	for _, e := range r.ix.Models {
		entries = append(entries, *e)
	}
	etag = r.etagLocked()
	loaded := r.active.Load()
	r.mu.Unlock()
	if loaded != nil {
		active = loaded.model.Metadata().Version
	}
	for i := range entries {
		// An entry recorded as active whose model is not serving (restore
		// failed) is shown as archived, so the list never names a model
		// that does not answer predicts.
		if entries[i].Status == StatusActive && entries[i].Version != active {
			entries[i].Status = StatusArchived
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].TrainedAt.Equal(entries[j].TrainedAt) {
			return entries[i].TrainedAt.After(entries[j].TrainedAt)
		}
		return entries[i].Version < entries[j].Version
	})
	return active, entries, etag
}

// Source says where POST /model/load takes a model from.
type Source string

// The load sources of the contract.
const (
	SourceStaged   Source = "staged"
	SourceArchived Source = "archived"
	SourceFile     Source = "file"
)

// LoadRequest is the domain form of LoadModelRequest.
type LoadRequest struct {
	Version string
	Source  Source
	Path    string // SourceFile only
	// AuthenticatedAs is the name of the bearer token that asked for an
	// import (SourceFile only), recorded in its entry; "" when
	// authentication is off.
	AuthenticatedAs string
	// IfMatch, when not empty, loads only if it names the registry's
	// ETag (MatchETag); ExpectedActive, when not nil, only if that
	// version ("" for none) is active. Either failing is
	// ErrPreconditionFailed, and nothing changes.
	IfMatch        string
	ExpectedActive *string
}

// LoadResult reports a successful swap.
type LoadResult struct {
	Loaded    string
	Previous  string // "" when no model was active
	Algorithm string
	Duration  time.Duration
}

// Load makes a model active. Only one load runs at a time; a concurrent call
// fails at once with ErrLoadInProgress. On any failure the previous model
// stays active and the index is unchanged.
func (r *Registry) Load(ctx context.Context, req LoadRequest) (LoadResult, error) {
	start := time.Now()
	release, err := r.exclusive(ctx)
	if err != nil {
		return LoadResult{}, err
	}
	defer release()
	if err := r.checkPrecondition(req); err != nil {
		return LoadResult{}, err
	}
	if !ValidVersion(req.Version) {
		return LoadResult{}, fmt.Errorf("%w: version %q is not a valid version name", ErrModelNotFound, req.Version)
	}
	if req.Source == SourceFile && ReservedVersion(req.Version) {
		return LoadResult{}, fmt.Errorf("%w: %q names a route (/model/%s); choose another version name", ErrReservedVersion, req.Version, req.Version)
	}
	var entry *Entry
	switch req.Source {
	case SourceStaged, SourceArchived, "":
		entry, err = r.lookup(req)
	case SourceFile:
		entry, err = r.importFile(ctx, req)
	default:
		err = fmt.Errorf("unknown source %q", req.Source)
	}
	if err != nil {
		return LoadResult{}, err
	}
	model, err := r.openVerified(ctx, entry)
	if err != nil {
		if req.Source == SourceFile {
			r.discardFiles(ctx, entry)
		}
		return LoadResult{}, fmt.Errorf("load %q: %w", entry.Version, err)
	}
	if err := ctx.Err(); err != nil {
		if req.Source == SourceFile {
			r.discardFiles(ctx, entry)
		}
		return LoadResult{}, err
	}
	// An imported file's algorithm and sample count are known only once
	// it has been read: record them, so the model list shows them too.
	// (A copy: entry may be the index's own, which commitActive replaces.)
	md, filled := model.Metadata(), *entry
	if filled.Algorithm == "" {
		filled.Algorithm = md.Algorithm
	}
	if filled.TrainedSamples == 0 {
		filled.TrainedSamples = md.TrainedSamples
	}
	if filled.Shape == nil {
		filled.Shape = shapeOfModel(model)
	}
	entry = &filled
	previous, shadowCleared, err := r.commitActive(ctx, entry)
	if err != nil {
		if req.Source == SourceFile {
			r.discardFiles(ctx, entry)
		}
		return LoadResult{}, err
	}
	if shadowCleared {
		// Before the swap: the promoted model never shadows itself.
		r.tellClear()
		r.log.Info("shadow cleared: it is the active model now", "version", entry.Version)
	}
	r.active.Store(&activeModel{model: model, sha256: entry.SHA256})
	r.mu.Lock()
	r.restoreErr = nil
	r.mu.Unlock()
	r.log.Info("model activated", "version", entry.Version, "previous", previous, "source", req.Source)
	r.awaitFleet(ctx, r.Revision())
	return LoadResult{
		Loaded:    entry.Version,
		Previous:  previous,
		Algorithm: model.Metadata().Algorithm,
		Duration:  time.Since(start),
	}, nil
}

func (r *Registry) lookup(req LoadRequest) (*Entry, error) {
	want := req.Source
	if want == "" {
		want = SourceStaged
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.ix.Models[req.Version]
	if !ok {
		return nil, fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, req.Version)
	}
	switch {
	case e.Status == StatusActive:
		// Reloading the active version is allowed whatever the source.
	case string(e.Status) != string(want):
		return nil, fmt.Errorf("%w: version %q is %s, not %s; load it with source %q", ErrModelStatusMismatch, req.Version, e.Status, want, e.Status)
	}
	c := *e
	return &c, nil
}

// commitActive records entry as active and the previous one as archived in
// one atomic index write, which also clears the shadow when entry is the
// shadow (shadowCleared). It returns the previous active version.
func (r *Registry) commitActive(ctx context.Context, entry *Entry) (previous string, shadowCleared bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.ix.Clone()
	if cur := r.Active(); cur != nil {
		previous = cur.Metadata().Version
	}
	for _, e := range next.Models {
		if e.Status == StatusActive && e.Version != entry.Version {
			e.Status = StatusArchived
		}
	}
	e := *entry
	e.Status = StatusActive
	next.Models[e.Version] = &e
	next.Active = e.Version
	if next.Shadow == e.Version {
		next.Shadow, shadowCleared = "", true
	}
	if err := r.commit(ctx, next); err != nil {
		return "", false, err
	}
	if shadowCleared {
		r.shadow.problem, r.shadow.restored = "", nil
	}
	return previous, shadowCleared, nil
}

// openVerified opens the entry's artifact, checked against its recorded
// size and checksum, and reads it.
func (r *Registry) openVerified(ctx context.Context, e *Entry) (inference.Model, error) {
	m, _, err := r.openChecked(ctx, e, fingerprint(e), max(r.opts.MaxImportBytes, maxArtifactBytes))
	return m, err
}

// openChecked opens e's artifact checked against want (at most limit
// bytes when want records no size) and reads it with e's reader. It
// returns the fingerprint of the bytes read.
func (r *Registry) openChecked(ctx context.Context, e *Entry, want store.Fingerprint, limit int64) (inference.Model, store.Fingerprint, error) {
	art, err := r.artifacts.Open(ctx, e.File, want, limit)
	if err != nil {
		return nil, store.Fingerprint{}, artifactError(e, err)
	}
	defer art.Close()
	m, err := r.openEntry(ctx, art, e)
	if err != nil {
		return nil, store.Fingerprint{}, err
	}
	return m, store.Fingerprint{SizeBytes: art.Size(), SHA256: art.SHA256()}, nil
}

// A reader that panics on a hostile file is a bug in the reader, but it
// must not take the server down (at start-up, restoring the active model,
// nothing else would catch it) or leave a load marked in progress: the
// panic becomes a MODEL_CORRUPTED error naming the file.
func (r *Registry) openEntry(ctx context.Context, art store.Artifact, e *Entry) (m inference.Model, err error) {
	open, ok := r.opts.Openers[path.Ext(e.File)]
	if !ok {
		return nil, fmt.Errorf("%w: no reader for %s files", inference.ErrModelCorrupted, path.Ext(e.File))
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("model reader panicked", "version", e.Version, "file", e.File, "panic", p, "stack", string(debug.Stack()))
			m, err = nil, fmt.Errorf("%w: %s could not be read (reader fault: %v)", inference.ErrModelCorrupted, path.Base(e.File), p)
		}
	}()
	m, err = open(ctx, io.NewSectionReader(art, 0, art.Size()), *e)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Metadata().Version != e.Version {
		return nil, fmt.Errorf("%w: reader returned a model that does not report version %q", inference.ErrModelCorrupted, e.Version)
	}
	return m, nil
}

// discardFiles removes the artifact of an import that did not become an
// entry, while it still holds the bytes the import wrote.
func (r *Registry) discardFiles(ctx context.Context, e *Entry) {
	if err := r.artifacts.Delete(context.WithoutCancel(ctx), e.File, fingerprint(e)); err != nil {
		r.log.Warn("the artifact of a failed import was not removed", "file", e.File, "err", err)
	}
}

// StagedModel describes a trained model to add as staged.
type StagedModel struct {
	Ext            string // file extension, ".npz"
	TrainedAt      time.Time
	TrainedSamples int
	Algorithm      string
	Operator       string
	// AuthenticatedAs is the name of the bearer token that started the
	// training; "" when authentication was off.
	AuthenticatedAs string
	SourceBatches   []string
	Notes           string
	// Annotations are the training request's annotations, compact JSON.
	Annotations json.RawMessage
	// Lineage and figures of the training, recorded in the entry.
	JobID             string
	TrainingCSVSHA256 string
	TrainingRows      int
	// RowsUsed are the rows that entered the model (TrainingRows less
	// the excluded ones, whose ids the model file's review keeps).
	RowsUsed int
	Metrics  *Metrics
	// Shape is recorded in the entry (ShapeOf the model's parameters).
	Shape *Shape
	// Write writes the model file content; it receives the version chosen.
	Write func(version string, w io.Writer) error
}

// AddStaged stores a new model artifact and records it as staged. A
// crash at any point leaves either no trace in the list or the complete
// model. It returns the version and the artifact's name.
func (r *Registry) AddStaged(ctx context.Context, m StagedModel) (version, relPath string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	var (
		size  int64
		sum   string
		taken = map[string]bool{}
	)
	for {
		version = r.newVersion(m.TrainedAt, taken)
		relPath = store.ModelsDir + "/" + version + m.Ext
		size, sum, err = r.artifacts.Put(ctx, relPath, func(w io.Writer) error { return m.Write(version, w) })
		if !errors.Is(err, store.ErrArtifactExists) || len(taken) >= maxVersionTries {
			break
		}
		// A file copied in by hand, or a training finished in the same
		// second: Put never replaces it, the next name is tried.
		taken[version] = true
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: write %s: %w", store.ErrRegistry, relPath, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &Entry{
		Version: version, Status: StatusStaged, File: relPath, SizeBytes: size, SHA256: sum,
		TrainedAt: m.TrainedAt.UTC(), TrainedSamples: m.TrainedSamples, Algorithm: m.Algorithm,
		Operator: m.Operator, AuthenticatedAs: m.AuthenticatedAs, SourceBatches: m.SourceBatches, Notes: m.Notes, AddedAt: r.opts.Now().UTC(),
		Annotations: m.Annotations, JobID: m.JobID, TrainingCSVSHA256: m.TrainingCSVSHA256, TrainingRows: m.TrainingRows, Metrics: m.Metrics,
		RowsUsed: m.RowsUsed,
		Shape:    m.Shape,
	}
	var already string // the version a job's model was staged as by another runner
	add := func(next *store.Index) error {
		if v := stagedForJob(next, m.JobID); v != "" {
			already = v
			return errStagedForJob
		}
		if _, taken := next.Models[version]; taken {
			// Another replica recorded the name since: its entry stays.
			return fmt.Errorf("%w: %w: version %q was recorded by another process", store.ErrRegistry, store.ErrConflict, version)
		}
		next.Models[version] = e
		return nil
	}
	if err := r.commitAdding(ctx, add); errors.Is(err, errStagedForJob) {
		// A job's model is staged once: a runner that lost its lease and
		// reached this point after the runner that took the job over gets
		// the first model's version, and its own file is removed.
		r.discardFiles(ctx, e)
		r.log.Warn("the job's model was already staged; this runner's copy is discarded", "job", m.JobID, "version", already)
		return already, r.ix.Models[already].File, nil
	} else if err != nil {
		r.discardFiles(ctx, e)
		return "", "", err
	}
	return version, relPath, nil
}

// errStagedForJob: the index already holds a model of the job.
var errStagedForJob = errors.New("the job's model is already staged")

// stagedForJob returns the version of ix staged by job, "" when none
// (or when jobID is "": a model not trained here).
func stagedForJob(ix *store.Index, jobID string) string {
	if jobID == "" {
		return ""
	}
	for v, e := range ix.Models {
		if e.JobID == jobID {
			return v
		}
	}
	return ""
}

// maxVersionTries bounds how many taken names AddStaged skips.
const maxVersionTries = 100

// newVersion names a trained model after its training time, e.g.
// "pls-20261122-101500", with a numeric suffix on collision with an entry
// or a name in taken.
func (r *Registry) newVersion(t time.Time, taken map[string]bool) string {
	base := "pls-" + t.UTC().Format("20060102-150405")
	r.mu.Lock()
	defer r.mu.Unlock()
	v := base
	for i := 2; ; i++ {
		if _, inIndex := r.ix.Models[v]; !inIndex && !taken[v] {
			return v
		}
		v = fmt.Sprintf("%s-%d", base, i)
	}
}
