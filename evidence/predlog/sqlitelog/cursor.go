package sqlitelog

import (
	"encoding/base64"
	"encoding/binary"

	"ramanserve/evidence/predlog"
)

// A cursor is the keyset position of the last record of a page: its time
// (Unix nanoseconds) and row id, the order Page sorts by. It is opaque to
// callers: a format byte, two signed varints, base64url without padding.
// It carries no filter, so a cursor used with another filter still only
// positions the scan; it cannot widen what the filter selects.
const cursorFormat = 1

// maxCursorLen bounds the text decodeCursor accepts (1 + 2*10 bytes of
// varints in base64).
const maxCursorLen = 32

type cursor struct {
	ts int64
	id int64
}

func encodeCursor(c cursor) string {
	var b [1 + 2*binary.MaxVarintLen64]byte
	b[0] = cursorFormat
	n := 1 + binary.PutVarint(b[1:], c.ts)
	n += binary.PutVarint(b[n:], c.id)
	return base64.RawURLEncoding.EncodeToString(b[:n])
}

func decodeCursor(s string) (cursor, error) {
	if len(s) == 0 || len(s) > maxCursorLen {
		return cursor{}, predlog.ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 3 || b[0] != cursorFormat {
		return cursor{}, predlog.ErrBadCursor
	}
	ts, n := binary.Varint(b[1:])
	if n <= 0 {
		return cursor{}, predlog.ErrBadCursor
	}
	id, m := binary.Varint(b[1+n:])
	if m <= 0 || 1+n+m != len(b) || id < 0 {
		return cursor{}, predlog.ErrBadCursor
	}
	c := cursor{ts: ts, id: id}
	// One text per position: a cursor that re-encodes differently (a
	// non-minimal varint) was not made here.
	if encodeCursor(c) != s {
		return cursor{}, predlog.ErrBadCursor
	}
	return c, nil
}
