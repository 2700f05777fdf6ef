// Package registry keeps model files on disk with their metadata and holds
// the active model for the prediction hot path.
//
// Layout of the registry directory:
//
//	index.json         every model's metadata, lineage, status, the active pointer and the shadow (written atomically);
//	                   "removing" lists files of deleted entries not yet unlinked
//	models/<version>.* model files: .npz artifacts trained here, .joblib imports (+ .joblib.json sidecar)
//	import/            the default allowed root for POST /model/load with source "file"
//	jobs/              training job records (owned by package trainer)
//	quarantine/        model files found unreadable, each with <name>.reason.txt (never deleted by the server)
//	.ramanserve.lock   flock held by the serving process; holds its PID
//	.ramanserve-tmp-*  temp files of writes in progress (the only names start-up removes)
//
// The registry owns its directory and never deletes a file it did not
// write, or adopt: Delete removes a staged or archived version's own file
// in models/ (see Delete for the crash ordering), nothing else. Open takes an exclusive flock on .ramanserve.lock before reading
// anything, so a second process on the same directory stops at once (its
// error names the holder's PID) without changing a byte. Start-up removes
// regular files named with TempPrefix in the registry folder, models/,
// jobs/ and quarantine/, and nothing else. A .npz or .joblib in models/
// with no index entry (copied in by hand, or written just before a crash)
// is adopted as archived: version = its file stem when that is a valid,
// unused version name, else a name derived from it; the file is read
// through the same reader as a load (a .joblib through the restricted reader, with its
// .joblib.json sidecar) and its SHA-256 recorded. A file that fails to read
// (or is a symbolic link or special file, which is never followed) is
// moved to quarantine/ with the reason beside it; health reads degraded and
// names it for as long as it is there (quarantine/ is listed at each
// health call, so removing the file clears it).
//
// Every entry records its file's size and SHA-256 (sha256) when the
// registry writes, imports or adopts it; each open (load or restore)
// verifies them, and a mismatch is MODEL_CORRUPTED.
//
// index.json missing, or empty (0 bytes or white space), is rebuilt from the
// model files, all archived, nothing active: an atomic rename can leave
// neither, and there is nothing in such a file to lose. A non-empty index
// that cannot be trusted (not JSON, another format_version, models null or
// absent, an entry that names a file outside models/) stops Open with
// ErrIndexCorrupt and leaves every file as it is: it was written to say
// something (statuses, the active model, notes), so the operator decides.
// `ramanserve registry check DIR -repair` sets it aside as
// index.json.corrupt-<time> and rebuilds the list from the files.
//
// The active model is an atomic pointer: a predict reads it once and runs to
// completion on that model, so a swap never splits a call.
package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/inference"
)

// OpenFunc turns a model file in the registry into a ready Model. The entry
// gives the version and metadata the model must report.
type OpenFunc func(ctx context.Context, path string, entry Entry) (inference.Model, error)

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
}

// Registry is the on-disk model registry plus the active model.
type Registry struct {
	dir   string
	opts  Options
	roots []string // resolved allowed roots
	log   *slog.Logger

	active atomic.Pointer[activeModel]

	loadMu sync.Mutex // held for the whole of a load; TryLock gives LOAD_IN_PROGRESS
	mu     sync.Mutex // guards ix and index.json writes
	ix     *index

	shadow     shadowState // the shadow's model, follower and problem; guarded by mu
	restoreErr error       // set when the active model could not be restored at start-up; guarded by mu
	problems   []string    // what start-up could not fix, for health; guarded by mu
	lock       *dirLock    // the registry directory's exclusive lock; nil once closed

	// deleteCommitted, when set (by the package's tests only), runs
	// between a delete's index write and its file removal: the crash
	// window the kill -9 test stops the process in.
	deleteCommitted func()
}

type activeModel struct{ model inference.Model }

// versionPattern matches the Version schema of api/openapi.yaml; versions
// name files, so this also keeps them from escaping the models folder.
var versionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidVersion reports whether v is an acceptable version name.
func ValidVersion(v string) bool { return versionPattern.MatchString(v) && !strings.Contains(v, "..") }

// ReservedVersion reports whether v is a name the management routes use
// beside /model/{version} (POST /model/load, GET /model/list, GET
// /model/info, /model/shadow): no model is given one, so every version has
// its URL.
func ReservedVersion(v string) bool {
	return v == "load" || v == "list" || v == "info" || v == "shadow"
}

// Open opens (creating if needed) the registry in dir and restores the
// active model. Before it reads anything it takes the registry's exclusive
// lock: a second process (or a second Open) fails at once with ErrLocked,
// naming the holder's PID, having changed nothing on disk. It then removes
// the temp files of interrupted writes (TempPrefix names only), adopts
// model files that have no index entry (archived) and moves those that
// cannot be read to quarantine/. A missing or empty index.json is rebuilt
// from the model files; a corrupt one (ErrIndexCorrupt) fails Open with
// the repair command in the message, and no file is touched.
//
// A model that fails to restore does not fail Open: the server starts
// without a model and RestoreError reports why (health then reads
// degraded). Close releases the lock.
func Open(ctx context.Context, dir string, opts Options) (*Registry, error) {
	r, err := lockRegistry(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := r.open(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// lockRegistry creates dir if needed, takes its lock and returns a
// registry with nothing read yet.
func lockRegistry(dir string, opts Options) (*Registry, error) {
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
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create registry folder: %w", err)
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	return &Registry{dir: abs, opts: opts, log: opts.Logger, lock: lock, ix: emptyIndex()}, nil
}

func (r *Registry) open(ctx context.Context) error {
	// The index first: a corrupt one stops everything before any write.
	ix, state, err := readIndex(r.dir)
	if errors.Is(err, ErrIndexCorrupt) {
		return fmt.Errorf("%w. Nothing in the registry was changed. Run `ramanserve registry check %s -repair` to set index.json aside and rebuild the list from the model files (every one is listed as archived)", err, r.dir)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", inference.ErrRegistry, err)
	}
	r.ix = ix
	for _, sub := range []string{modelsDir, "import", "jobs"} {
		if err := os.MkdirAll(filepath.Join(r.dir, sub), 0o755); err != nil {
			return fmt.Errorf("create registry folder: %w", err)
		}
	}
	if err := r.resolveRoots(); err != nil {
		return err
	}
	r.sweepTemp()
	removed := r.finishRemovals(ctx)
	if adopted := r.adoptOrphans(ctx); adopted > 0 || removed {
		if state != indexOK {
			r.log.Warn("index.json was missing or empty: rebuilt from the model files, all archived", "models", adopted)
		}
		if err := writeIndex(r.dir, r.ix); err != nil {
			// The adopted entries are served from memory and adopted
			// again at the next start; nothing is lost.
			r.log.Error("could not record adopted model files in index.json", "err", err)
			r.addProblem("adopted model files could not be recorded in index.json: " + err.Error())
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

// Close releases the registry's lock. Call it once nothing uses the
// registry any more (server shutdown); it is safe to call twice.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.lock.release()
	r.lock = nil
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
	r.active.Store(&activeModel{model: m})
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
// inference.ErrRegistry and the failing call's *os.PathError, so
// errors.Is finds the errno (ENOSPC, EROFS, EDQUOT).
func (r *Registry) Writable() error {
	f, err := os.CreateTemp(r.dir, TempPrefix+"probe-*")
	if err != nil {
		return fmt.Errorf("%w: registry not writable: %w", inference.ErrRegistry, err)
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
		return fmt.Errorf("%w: registry not writable: %w", inference.ErrRegistry, err)
	}
	return nil
}

// List returns the active version ("" when none is loaded) and every entry,
// sorted by TrainedAt descending, ties by version.
func (r *Registry) List() (active string, entries []Entry) {
	r.mu.Lock()
	for _, e := range r.ix.Models {
		entries = append(entries, *e)
	}
	r.mu.Unlock()
	loaded := ""
	if m := r.Active(); m != nil {
		loaded = m.Metadata().Version
	}
	for i := range entries {
		// An entry recorded as active whose model is not serving (restore
		// failed) is shown as archived, so the list never names a model
		// that does not answer predicts.
		if entries[i].Status == StatusActive && entries[i].Version != loaded {
			entries[i].Status = StatusArchived
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].TrainedAt.Equal(entries[j].TrainedAt) {
			return entries[i].TrainedAt.After(entries[j].TrainedAt)
		}
		return entries[i].Version < entries[j].Version
	})
	return loaded, entries
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
	if !r.loadMu.TryLock() {
		return LoadResult{}, inference.ErrLoadInProgress
	}
	defer r.loadMu.Unlock()
	if !ValidVersion(req.Version) {
		return LoadResult{}, fmt.Errorf("%w: version %q is not a valid version name", inference.ErrModelNotFound, req.Version)
	}
	if req.Source == SourceFile && ReservedVersion(req.Version) {
		return LoadResult{}, fmt.Errorf("%w: %q names a route (/model/%s); choose another version name", inference.ErrReservedVersion, req.Version, req.Version)
	}
	var (
		entry *Entry
		err   error
	)
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
			r.discardFiles(entry)
		}
		return LoadResult{}, fmt.Errorf("load %q: %w", entry.Version, err)
	}
	if err := ctx.Err(); err != nil {
		if req.Source == SourceFile {
			r.discardFiles(entry)
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
	previous, shadowCleared, err := r.commitActive(entry)
	if err != nil {
		if req.Source == SourceFile {
			r.discardFiles(entry)
		}
		return LoadResult{}, err
	}
	if shadowCleared {
		// Before the swap: the promoted model never shadows itself.
		r.tellClear()
		r.log.Info("shadow cleared: it is the active model now", "version", entry.Version)
	}
	r.active.Store(&activeModel{model: model})
	r.mu.Lock()
	r.restoreErr = nil
	r.mu.Unlock()
	r.log.Info("model activated", "version", entry.Version, "previous", previous, "source", req.Source)
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
		return nil, fmt.Errorf("%w: version %q is not in the registry", inference.ErrModelNotFound, req.Version)
	}
	switch {
	case e.Status == StatusActive:
		// Reloading the active version is allowed whatever the source.
	case string(e.Status) != string(want):
		return nil, fmt.Errorf("%w: version %q is %s, not %s; load it with source %q", inference.ErrModelStatusMismatch, req.Version, e.Status, want, e.Status)
	}
	c := *e
	return &c, nil
}

// commitActive records entry as active and the previous one as archived in
// one atomic index write, which also clears the shadow when entry is the
// shadow (shadowCleared). It returns the previous active version.
func (r *Registry) commitActive(entry *Entry) (previous string, shadowCleared bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.ix.clone()
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
	if err := writeIndex(r.dir, next); err != nil {
		return "", false, fmt.Errorf("%w: %w", inference.ErrRegistry, err)
	}
	r.ix = next
	if shadowCleared {
		r.shadow.problem, r.shadow.restored = "", nil
	}
	return previous, shadowCleared, nil
}

// openVerified checks the entry's file against its recorded size and
// checksum, then reads it.
func (r *Registry) openVerified(ctx context.Context, e *Entry) (inference.Model, error) {
	if err := r.verifyFile(ctx, e); err != nil {
		return nil, err
	}
	return r.openEntry(ctx, e)
}

// A reader that panics on a hostile file is a bug in the reader, but it
// must not take the server down (at start-up, restoring the active model,
// nothing else would catch it) or leave a load marked in progress: the
// panic becomes a MODEL_CORRUPTED error naming the file.
func (r *Registry) openEntry(ctx context.Context, e *Entry) (m inference.Model, err error) {
	path := filepath.Join(r.dir, filepath.FromSlash(e.File))
	open, ok := r.opts.Openers[filepath.Ext(path)]
	if !ok {
		return nil, fmt.Errorf("%w: no reader for %s files", inference.ErrModelCorrupted, filepath.Ext(path))
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("model reader panicked", "version", e.Version, "file", e.File, "panic", p, "stack", string(debug.Stack()))
			m, err = nil, fmt.Errorf("%w: %s could not be read (reader fault: %v)", inference.ErrModelCorrupted, filepath.Base(path), p)
		}
	}()
	m, err = open(ctx, path, *e)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Metadata().Version != e.Version {
		return nil, fmt.Errorf("%w: reader returned a model that does not report version %q", inference.ErrModelCorrupted, e.Version)
	}
	return m, nil
}

func (r *Registry) discardFiles(e *Entry) {
	p := filepath.Join(r.dir, filepath.FromSlash(e.File))
	_ = os.Remove(p)
	_ = os.Remove(p + ".json")
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

// AddStaged writes a new model file atomically and records it as staged. A
// crash at any point leaves either no trace in the list or the complete model.
// It returns the version and the file path relative to the registry.
func (r *Registry) AddStaged(ctx context.Context, m StagedModel) (version, relPath string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	version = r.newVersion(m.TrainedAt)
	relPath = "models/" + version + m.Ext
	full := filepath.Join(r.dir, filepath.FromSlash(relPath))
	size, sum, err := writeStreamAtomic(full, func(w io.Writer) error { return m.Write(version, w) })
	if err != nil {
		return "", "", fmt.Errorf("%w: write %s: %w", inference.ErrRegistry, relPath, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.ix.clone()
	next.Models[version] = &Entry{
		Version: version, Status: StatusStaged, File: relPath, SizeBytes: size, SHA256: sum,
		TrainedAt: m.TrainedAt.UTC(), TrainedSamples: m.TrainedSamples, Algorithm: m.Algorithm,
		Operator: m.Operator, AuthenticatedAs: m.AuthenticatedAs, SourceBatches: m.SourceBatches, Notes: m.Notes, AddedAt: r.opts.Now().UTC(),
		Annotations: m.Annotations, JobID: m.JobID, TrainingCSVSHA256: m.TrainingCSVSHA256, TrainingRows: m.TrainingRows, Metrics: m.Metrics,
		RowsUsed: m.RowsUsed,
		Shape:    m.Shape,
	}
	if err := writeIndex(r.dir, next); err != nil {
		_ = os.Remove(full)
		return "", "", fmt.Errorf("%w: %w", inference.ErrRegistry, err)
	}
	r.ix = next
	return version, relPath, nil
}

// newVersion names a trained model after its training time, e.g.
// "pls-20261122-101500", with a numeric suffix on collision.
func (r *Registry) newVersion(t time.Time) string {
	base := "pls-" + t.UTC().Format("20060102-150405")
	r.mu.Lock()
	defer r.mu.Unlock()
	v := base
	for i := 2; ; i++ {
		if _, taken := r.ix.Models[v]; !taken {
			if _, err := os.Stat(filepath.Join(r.dir, "models", v+".npz")); errors.Is(err, os.ErrNotExist) {
				return v
			}
		}
		v = fmt.Sprintf("%s-%d", base, i)
	}
}

// writeStreamAtomic streams content into a temp file beside path, fsyncs
// it, renames it over path and fsyncs the directory. It returns the size
// and the hex SHA-256 of what it wrote.
func writeStreamAtomic(path string, write func(io.Writer) error) (int64, string, error) {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, path)
	if err != nil {
		return 0, "", err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(tmp, h)}
	if err := write(cw); err != nil {
		tmp.Close()
		return 0, "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, "", err
	}
	if err := tmp.Close(); err != nil {
		return 0, "", err
	}
	if err := os.Rename(tmpName, path); err != nil {
		return 0, "", err
	}
	return cw.n, hex.EncodeToString(h.Sum(nil)), SyncDir(dir)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
