package jobfiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"ramanserve/platform/atomicfile"
	"ramanserve/platform/regularfile"
	"ramanserve/trainer/jobs"
)

// KeysFile holds the idempotency keys: one JSON document, rewritten whole
// (atomically) at every change. Its name has no record suffix, so LoadAll
// never takes it for a job.
const KeysFile = "idempotency-keys"

// maxKeysFileBytes bounds the file read: 10,000 keys of at most 255
// bytes, escaped to 6 bytes a byte at worst, with their digest, job id
// and time, fit in 20 MiB.
const maxKeysFileBytes = 20 << 20

// keyFile is the keys in memory, read from KeysFile at first use. The
// directory's lock (the registry's) makes this process its only writer.
type keyFile struct {
	mu     sync.Mutex
	loaded bool
	recs   map[string]jobs.KeyRecord
}

type keyEntry struct {
	Key         string    `json:"key"`
	RequestHash string    `json:"request_hash"`
	JobID       string    `json:"job_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// ClaimKey implements jobs.KeyStore.
func (d *Dir) ClaimKey(ctx context.Context, rec jobs.KeyRecord, limits jobs.KeyLimits) (jobs.KeyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return jobs.KeyRecord{}, false, err
	}
	k := &d.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	d.loadKeysLocked()
	cutoff := rec.CreatedAt.Add(-limits.TTL)
	if held, ok := k.recs[rec.Key]; ok && held.CreatedAt.After(cutoff) {
		return held, false, nil
	}
	next := make(map[string]jobs.KeyRecord, len(k.recs)+1)
	for key, r := range k.recs {
		if r.CreatedAt.After(cutoff) {
			next[key] = r
		}
	}
	next[rec.Key] = rec
	trimOldest(next, limits.Max)
	if err := d.writeKeys(next); err != nil {
		return jobs.KeyRecord{}, false, err
	}
	k.recs = next
	_, kept := next[rec.Key]
	return rec, kept, nil
}

// ForgetKey implements jobs.KeyStore.
func (d *Dir) ForgetKey(ctx context.Context, key, jobID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := &d.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	d.loadKeysLocked()
	if r, ok := k.recs[key]; !ok || r.JobID != jobID {
		return nil
	}
	next := make(map[string]jobs.KeyRecord, len(k.recs))
	for key2, r := range k.recs {
		if key2 != key {
			next[key2] = r
		}
	}
	if err := d.writeKeys(next); err != nil {
		return err
	}
	k.recs = next
	return nil
}

// trimOldest drops the oldest records of recs beyond max (0: no bound).
func trimOldest(recs map[string]jobs.KeyRecord, max int) {
	if max <= 0 || len(recs) <= max {
		return
	}
	all := make([]jobs.KeyRecord, 0, len(recs))
	for _, r := range recs {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.Before(all[j].CreatedAt)
		}
		return all[i].Key < all[j].Key
	})
	for _, r := range all[:len(all)-max] {
		delete(recs, r.Key)
	}
}

// loadKeysLocked reads KeysFile once. A file that cannot be read is
// logged and taken for empty: keys are a convenience for retries, and a
// damaged file must not stop uploads; the next claim rewrites it.
func (d *Dir) loadKeysLocked() {
	k := &d.keys
	if k.loaded {
		return
	}
	k.loaded, k.recs = true, map[string]jobs.KeyRecord{}
	recs, err := readKeys(filepath.Join(d.dir, KeysFile))
	if err != nil {
		d.log.Warn("idempotency keys unreadable; starting without them", "file", KeysFile, "err", err)
		return
	}
	for _, e := range recs {
		k.recs[e.Key] = jobs.KeyRecord(e)
	}
}

func readKeys(path string) ([]keyEntry, error) {
	f, _, err := regularfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeysFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeysFileBytes {
		return nil, fmt.Errorf("over the %d-byte limit", maxKeysFileBytes)
	}
	var recs []keyEntry
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// writeKeys replaces KeysFile with recs, oldest first.
func (d *Dir) writeKeys(recs map[string]jobs.KeyRecord) error {
	out := make([]keyEntry, 0, len(recs))
	for _, r := range recs {
		out = append(out, keyEntry(r))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Key < out[j].Key
	})
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("jobfiles: encode idempotency keys: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(d.dir, KeysFile), b); err != nil {
		return fmt.Errorf("jobfiles: write idempotency keys: %w", err)
	}
	return nil
}
