package jobs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
)

// A list cursor names a position in the job order (submitted time newest
// first, ties by job id): the last job of the page before. It is
// base64url (no padding) of a version byte and the JSON {"t": unix
// nanoseconds, "id": job id}, and must name a job this server holds (job
// records are never removed, so a cursor outlives a restart). Decoding is bounded by maxCursorBytes before
// anything is allocated for it, and a cursor only moves where a page
// starts: it never makes a page longer or a listing costlier than one
// pass over the jobs.
const (
	cursorVersion  = 1
	maxCursorBytes = 512 // the contract's maxLength of the cursor parameter
	maxCursorID    = 128 // the contract's maxLength of a job id
)

// position is a place in the job order.
type position struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

func positionOf(j *Job) position { return position{T: j.SubmittedAt.UnixNano(), ID: j.ID} }

// before reports whether a comes before b in the listing order: newer
// first, then by job id.
func (a position) before(b position) bool {
	if a.T != b.T {
		return a.T > b.T
	}
	return a.ID < b.ID
}

func encodeCursor(p position) string {
	b, _ := json.Marshal(p) // two plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion}, b...))
}

// decodeCursor parses a cursor; every failure wraps ErrInvalidCursor.
func decodeCursor(s string) (position, error) {
	invalid := func(why string) (position, error) {
		return position{}, fmt.Errorf("%w: %s; pass the next_cursor of a previous page, or none", ErrInvalidCursor, why)
	}
	if len(s) == 0 || len(s) > maxCursorBytes {
		return invalid(fmt.Sprintf("a cursor is 1 to %d characters", maxCursorBytes))
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return invalid("it is not base64url")
	}
	if len(raw) < 2 || raw[0] != cursorVersion {
		return invalid("unknown cursor format")
	}
	dec := json.NewDecoder(bytes.NewReader(raw[1:]))
	dec.DisallowUnknownFields()
	var p position
	if err := dec.Decode(&p); err != nil {
		return invalid("its position cannot be read")
	}
	if dec.More() || dec.InputOffset() != int64(len(raw)-1) {
		return invalid("it has trailing data")
	}
	if p.ID == "" || len(p.ID) > maxCursorID {
		return invalid("its position is out of range")
	}
	return p, nil
}

// Page is one page of the job list.
type Page struct {
	Jobs []Job
	// Next is the cursor of the next page; "" on the last page.
	Next string
}

// DefaultPageSize and MaxPageSize bound a page of List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// List returns jobs newest first (submitted time, ties by id), at most
// limit of them (DefaultPageSize when limit <= 0, at most MaxPageSize),
// starting after cursor ("" for the first page), only those in status when
// it is not "". Records loaded at start-up are included. A cursor
// this package did not encode fails with ErrInvalidCursor.
func (m *Manager) List(status Status, limit int, cursor string) (Page, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	var (
		after    position
		hasAfter bool
	)
	if cursor != "" {
		p, err := decodeCursor(cursor)
		if err != nil {
			return Page{}, err
		}
		after, hasAfter = p, true
	}
	if m.leases != nil {
		// A fleet replica lists the shared store's records, as every
		// other replica does.
		ctx, cancel := storeContext()
		defer cancel()
		if err := m.refresh(ctx); err != nil {
			return Page{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if hasAfter {
		// A cursor names the last job of a page this server listed: a
		// well-formed position naming no job (made up, or one whose
		// record was removed) is refused too.
		if j, ok := m.jobs[after.ID]; !ok || positionOf(j) != after {
			return Page{}, fmt.Errorf("%w: it names no job of this server; pass the next_cursor of a previous page, or none", ErrInvalidCursor)
		}
	}
	// One pass keeps the limit+1 first matching jobs in order: a page
	// costs one look at every job (and a binary search among at most
	// limit+1 kept ones) and holds limit+1 pointers, whatever the cursor.
	best := make([]*Job, 0, limit+1)
	for _, j := range m.jobs {
		if status != "" && j.Status != status {
			continue
		}
		p := positionOf(j)
		if hasAfter && !after.before(p) {
			continue
		}
		i := sort.Search(len(best), func(k int) bool { return p.before(positionOf(best[k])) })
		if i > limit {
			continue
		}
		best = append(best, nil)
		copy(best[i+1:], best[i:])
		best[i] = j
		if len(best) > limit+1 {
			best = best[:limit+1]
		}
	}
	page := Page{Jobs: make([]Job, 0, min(len(best), limit))}
	for i, j := range best {
		if i == limit {
			page.Next = encodeCursor(positionOf(best[limit-1]))
			break
		}
		page.Jobs = append(page.Jobs, *j)
	}
	return page, nil
}
