package pglog

import (
	"encoding/base64"
	"encoding/binary"

	"ramanserve/evidence/predlog"
)

// A cursor is the position of a page's last record in the (ts, id) order
// of the pages: a format byte and the two numbers as 8 bytes big-endian
// each, in unpadded base64url. Decoding is strict (exact length, no stray
// bits), so each position has one text and anything else is
// predlog.ErrBadCursor. A cursor carries no filter: used with another
// filter it only positions the scan, it never widens what the filter
// selects.
type cursor struct {
	ts, id int64
}

const (
	cursorFormat = 1
	cursorBytes  = 1 + 8 + 8
)

var cursorEncoding = base64.RawURLEncoding.Strict()

func (c cursor) String() string {
	var b [cursorBytes]byte
	b[0] = cursorFormat
	binary.BigEndian.PutUint64(b[1:9], uint64(c.ts))
	binary.BigEndian.PutUint64(b[9:], uint64(c.id))
	return cursorEncoding.EncodeToString(b[:])
}

func parseCursor(text string) (cursor, error) {
	if len(text) != cursorEncoding.EncodedLen(cursorBytes) {
		return cursor{}, predlog.ErrBadCursor
	}
	b, err := cursorEncoding.DecodeString(text)
	if err != nil || len(b) != cursorBytes || b[0] != cursorFormat {
		return cursor{}, predlog.ErrBadCursor
	}
	c := cursor{ts: int64(binary.BigEndian.Uint64(b[1:9])), id: int64(binary.BigEndian.Uint64(b[9:]))}
	if c.id <= 0 {
		return cursor{}, predlog.ErrBadCursor
	}
	return c, nil
}
