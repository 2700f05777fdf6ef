// Package registry keeps the models with their metadata and holds the
// active model.
//
// # Rules and state
//
// The registry is the one place of the lifecycle rules: which source a
// load takes a model from (staged, archived, an import from an allowed
// file root), that at most one version is active and the shadow is never
// that one, the atomic swap of the served model after the index records
// it, that only staged or archived versions are deleted, that a file that
// fails to read is quarantined and listed in Problems, and that adopted
// and imported files get an archived or staged entry.
//
// The registry's record, the index (entries, the active pointer, the
// shadow, and the removals of deletes in progress), is kept by an
// IndexStore (package registry/store defines the contract; package
// registry/storetest checks it). The registry changes the index only by
// a commit naming the revision it last read or committed, so a store
// refuses a change made on stale state (store.ErrConflict) instead of
// losing another writer's: each rule decides on a copy of the index and
// commits it whole, and a commit is the point where its change happens.
// A commit the store refuses fails the operation (store.ErrRegistry,
// wrapping the store's error) and leaves the registry's copy of the index
// and the served model as they were.
// A store's commit is atomic and durable on return; see
// store.IndexStore. New builds a registry over any IndexStore and
// ArtifactStore; Open builds it over the file store (package
// registry/filestore), which keeps the index as index.json and the
// artifacts in models/, under the directory's lock.
//
// The model files (the artifacts) are kept by an ArtifactStore (also
// defined in registry/store and checked by registry/storetest): the
// registry stores an artifact once, under a name no artifact has
// (store.ErrArtifactExists otherwise: nothing is ever replaced), records
// the size and SHA-256 the store returns in the entry, opens it only
// through the store's check against them (a mismatch is
// MODEL_CORRUPTED), deletes it only while it still has them, and asks the
// store to quarantine one that cannot be read. The model readers
// (OpenFunc) get the checked bytes as an io.SectionReader over the
// store's copy (in the file store, the open file), so a swap reads the
// artifact where the store keeps it instead of copying it into memory.
// An import from an allowed file root reads that file as input, then
// puts it in the store. The file store (package registry/filestore)
// keeps the artifacts in the registry directory as described below.
//
// # The registry directory
//
// Its layout, with the file store:
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
// in models/ (see Delete for the crash ordering), nothing else. Open
// takes an exclusive flock on .ramanserve.lock before reading anything,
// so a second process on the same directory stops at once (its error
// names the holder's PID) without changing a byte. Start-up removes
// regular files named with atomicfile.TempPrefix in the registry folder, models/,
// jobs/ and quarantine/, and nothing else. A .npz or .joblib in models/
// with no index entry (copied in by hand, or written just before a crash)
// is adopted as archived: version = its file stem when that is a valid,
// unused version name, else a name derived from it; the file is read
// through the same reader as a load (a .joblib through the restricted
// reader, with its .joblib.json sidecar) and its SHA-256 recorded. A file that fails to read
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
// store.ErrIndexCorrupt and leaves every file as it is: it was written to say
// something (statuses, the active model, notes), so the operator decides.
// `ramanserve registry check DIR -repair` sets it aside as
// index.json.corrupt-<time> and rebuilds the list from the files.
//
// The active model is an atomic pointer: a predict reads it once and runs to
// completion on that model, so a swap never splits a call.
package registry
