package storecopy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	"ramanserve/registry/store"
)

// maxUnsizedArtifact bounds an artifact whose index entry records no size
// (an entry from before sizes were kept): the registry's own bound on a
// model file.
const maxUnsizedArtifact = 1 << 30

// ErrIndexDiffers means the target already has a registry index other
// than the source's: the copy does not merge two registries.
var ErrIndexDiffers = errors.New("the target already holds another registry index; store copy never merges registries: copy into a store whose registry is empty")

// ErrArtifactDiffers means the target holds an artifact under a copied
// name with other content.
var ErrArtifactDiffers = errors.New("the target holds another artifact under this name")

// copyModels copies the artifact of every index entry (with its sidecar)
// and then the index, so that the target never has an index naming an
// artifact it lacks. An artifact already in the target with the same
// size and SHA-256 is skipped: that is how a second run resumes. Files
// the index does not name (orphans, leftovers of deletes) are not
// copied: they have no recorded checksum to verify them against, and
// `ramanserve registry check -repair` adopts or removes them first. Any
// artifact that cannot be copied leaves the target's index untouched.
func (c *copier) copyModels(ctx context.Context) error {
	ix, _, err := c.from.Index.ReadIndex(ctx)
	if err != nil {
		return fmt.Errorf("read the source index: %w", err)
	}
	listed, err := c.from.Artifacts.List(ctx)
	if err != nil {
		return fmt.Errorf("list the source artifacts: %w", err)
	}
	inTarget, err := artifactNames(ctx, c.to.Artifacts)
	if err != nil {
		return fmt.Errorf("list the target artifacts: %w", err)
	}
	entries := entriesByFile(ix)
	var problems []error
	for _, a := range listed {
		e := entries[a.Name]
		if e == nil {
			c.progress("  %s: not named by the index, not copied (ramanserve registry check -repair adopts it)", a.Name)
			continue
		}
		delete(entries, a.Name)
		if err := c.copyArtifact(ctx, a, e, inTarget[a.Name]); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			problems = append(problems, err)
			c.progress("  %s: NOT COPIED: %v", a.Name, err)
		}
	}
	for _, file := range sortedKeys(entries) {
		problems = append(problems, fmt.Errorf("model %s: its artifact %s is missing from the source", entries[file].Version, file))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the index was not copied (fix the source with ramanserve registry check -repair, then copy again): %w", errors.Join(problems...))
	}
	return c.copyIndex(ctx, ix)
}

// copyArtifact copies one artifact, checked against its entry, unless the
// target already has it with the same content.
func (c *copier) copyArtifact(ctx context.Context, info store.ArtifactInfo, e *store.Entry, inTarget bool) error {
	if !info.Readable {
		return fmt.Errorf("model %s: %s is not a file the store reads", e.Version, info.Name)
	}
	src, err := c.from.Artifacts.Open(ctx, info.Name, store.Fingerprint{SizeBytes: e.SizeBytes, SHA256: e.SHA256}, maxUnsizedArtifact)
	if err != nil {
		return fmt.Errorf("model %s: %w", e.Version, err)
	}
	defer src.Close()
	got := store.Fingerprint{SizeBytes: src.Size(), SHA256: src.SHA256()}
	if inTarget {
		if err := sameInTarget(ctx, c.to.Artifacts, info.Name, got); err != nil {
			return fmt.Errorf("model %s: %w", e.Version, err)
		}
		c.sum.Models.Skipped++
		return nil
	}
	if err := c.copySidecar(ctx, info.Name); err != nil {
		return fmt.Errorf("model %s: sidecar: %w", e.Version, err)
	}
	size, sum, err := c.to.Artifacts.Put(ctx, info.Name, func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(src, 0, src.Size()))
		return err
	})
	if errors.Is(err, store.ErrArtifactExists) {
		// Put there since the listing: by another run of the copy, or not.
		if err := sameInTarget(ctx, c.to.Artifacts, info.Name, got); err != nil {
			return fmt.Errorf("model %s: %w", e.Version, err)
		}
		c.sum.Models.Skipped++
		return nil
	}
	if err != nil {
		return fmt.Errorf("model %s: store %s in the target: %w", e.Version, info.Name, err)
	}
	if size != got.SizeBytes || sum != got.SHA256 {
		return fmt.Errorf("model %s: the target stored %d bytes with SHA-256 %s, the source has %d bytes with %s", e.Version, size, sum, got.SizeBytes, got.SHA256)
	}
	c.sum.Models.Copied++
	c.progress("  %s (%s): %d bytes, sha256 %s", info.Name, e.Version, size, sum)
	return nil
}

// sameInTarget checks that the target's artifact name has the content
// want, which the target's Open verifies.
func sameInTarget(ctx context.Context, target store.ArtifactStore, name string, want store.Fingerprint) error {
	a, err := target.Open(ctx, name, want, want.SizeBytes)
	if errors.Is(err, store.ErrArtifactCorrupt) {
		return fmt.Errorf("%w: %s (%v)", ErrArtifactDiffers, name, err)
	}
	if err != nil {
		return fmt.Errorf("check %s in the target: %w", name, err)
	}
	return a.Close()
}

// copySidecar copies name's sidecar, which a store takes only before the
// artifact. A sidecar already in the target (a run stopped between the
// sidecar and the artifact) must be the same bytes.
func (c *copier) copySidecar(ctx context.Context, name string) error {
	data, err := c.from.Artifacts.ReadSidecar(ctx, name)
	if errors.Is(err, store.ErrArtifactNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.to.Artifacts.PutSidecar(ctx, name, data)
	if !errors.Is(err, store.ErrArtifactExists) {
		return err
	}
	there, rerr := c.to.Artifacts.ReadSidecar(ctx, name)
	if rerr != nil {
		return fmt.Errorf("%w; reading it back: %w", err, rerr)
	}
	if !bytes.Equal(there, data) {
		return fmt.Errorf("%w: the target holds another sidecar for %s", ErrArtifactDiffers, name)
	}
	return nil
}

// copyIndex commits the source's index into an empty target; a target
// that already has the same index is left alone, one with another index
// is refused (ErrIndexDiffers).
func (c *copier) copyIndex(ctx context.Context, ix *store.Index) error {
	there, rev, err := c.to.Index.ReadIndex(ctx)
	if err != nil {
		return fmt.Errorf("read the target index: %w", err)
	}
	if rev != 0 {
		same, err := sameIndex(ix, there)
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%w (the target has %d models, active %q; the source %d, active %q)", ErrIndexDiffers, len(there.Models), there.Active, len(ix.Models), ix.Active)
		}
		c.sum.Index = "already the same"
		return nil
	}
	if _, err := c.to.Index.CommitIndex(ctx, 0, ix); err != nil {
		return fmt.Errorf("commit the index into the target: %w", err)
	}
	c.sum.Index = "committed"
	c.progress("  index: %d models, active %q", len(ix.Models), ix.Active)
	return nil
}

// sameIndex compares two indexes by what they record: their JSON
// decoded, so that a store's encoding (key order, time zones written the
// same instant) does not count.
func sameIndex(a, b *store.Index) (bool, error) {
	da, err := decodedJSON(a)
	if err != nil {
		return false, err
	}
	db, err := decodedJSON(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(da, db), nil
}

func decodedJSON(ix *store.Index) (any, error) {
	if ix.Removing == nil {
		ix = ix.Clone()
		ix.Removing = []store.Removal{}
	}
	b, err := json.Marshal(ix)
	if err != nil {
		return nil, fmt.Errorf("encode an index: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode an index: %w", err)
	}
	return v, nil
}

func artifactNames(ctx context.Context, s store.ArtifactStore) (map[string]bool, error) {
	list, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(list))
	for _, a := range list {
		names[a.Name] = true
	}
	return names, nil
}

func entriesByFile(ix *store.Index) map[string]*store.Entry {
	m := make(map[string]*store.Entry, len(ix.Models))
	for _, e := range ix.Models {
		m[e.File] = e
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
