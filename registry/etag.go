package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"ramanserve/registry/store"
)

// tagCache is the ETag of one state: the index at rev, with loaded
// served. Guarded by Registry.mu.
type tagCache struct {
	rev    store.Revision
	loaded *activeModel
	valid  bool
	tag    string
}

// ETag names the registry's state as a strong entity tag (quoted): a
// digest of the index as committed and of the model served. It is a
// digest of content rather than the revision number itself, so it is the
// same on every replica serving one committed index, and never repeats
// for another state after a restart (the embedded store numbers its
// revisions from start-up).
func (r *Registry) ETag() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.etagLocked()
}

// etagLocked is ETag with mu held.
func (r *Registry) etagLocked() string {
	loaded := r.active.Load()
	if c := &r.tag; c.valid && c.rev == r.rev && c.loaded == loaded {
		return c.tag
	}
	h := sha256.New()
	// The index's JSON: its maps encode with sorted keys, so one state
	// has one digest wherever it is computed.
	if b, err := canonicalJSON(r.ix); err == nil {
		h.Write(b)
	} else {
		// An index that cannot be encoded could not have been committed;
		// the revision alone still changes with every commit.
		fmt.Fprintf(h, "rev %d", r.rev)
	}
	if loaded != nil {
		fmt.Fprintf(h, "\x00%s\x00%s", loaded.model.Metadata().Version, loaded.sha256)
	}
	tag := `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
	r.tag = tagCache{rev: r.rev, loaded: loaded, valid: true, tag: tag}
	return tag
}

// canonicalJSON is v's JSON with every empty list and object written as
// null. One committed index reaches a replica's memory by different paths
// (built by the replica that committed it, or decoded from the store),
// and Go writes a nil slice as null but an empty one as []: without this,
// two replicas serving the same index could name it with two ETags.
func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, err
	}
	return json.Marshal(emptyAsNull(generic))
}

// emptyAsNull replaces, through v, every empty list and object by nil.
func emptyAsNull(v any) any {
	switch t := v.(type) {
	case []any:
		if len(t) == 0 {
			return nil
		}
		for i := range t {
			t[i] = emptyAsNull(t[i])
		}
	case map[string]any:
		if len(t) == 0 {
			return nil
		}
		for k := range t {
			t[k] = emptyAsNull(t[k])
		}
	}
	return v
}

// MatchETag reports whether header, an If-Match or If-None-Match value
// (a list of entity tags, or *), names etag. Weak tags never match: this
// registry's tags are strong, and RFC 9110 compares them strongly for
// If-Match.
func MatchETag(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || (t != "" && t == etag) {
			return true
		}
	}
	return false
}

// checkPrecondition refuses a load whose IfMatch or ExpectedActive no
// longer holds; called under the load's lock, after a fleet's catch-up.
func (r *Registry) checkPrecondition(req LoadRequest) error {
	if req.IfMatch == "" && req.ExpectedActive == nil {
		return nil
	}
	active := ""
	if m := r.Active(); m != nil {
		active = m.Metadata().Version
	}
	name := "no model is active"
	if active != "" {
		name = fmt.Sprintf("the active version is %q", active)
	}
	if req.ExpectedActive != nil && *req.ExpectedActive != active {
		return fmt.Errorf("%w: expected_active is %q, but %s", ErrPreconditionFailed, *req.ExpectedActive, name)
	}
	if req.IfMatch != "" {
		if tag := r.ETag(); !MatchETag(req.IfMatch, tag) {
			return fmt.Errorf("%w: If-Match %s is not the current ETag %s; %s", ErrPreconditionFailed, req.IfMatch, tag, name)
		}
	}
	return nil
}
