// Package unixnano converts times to Unix nanoseconds for storage and
// queries. time.Time.UnixNano is undefined outside the years 1678–2262,
// and a caller's bound (a query's ?until=3000-01-01T00:00:00Z, a long
// retention subtracted from now) must not wrap around to the far past
// or future: it saturates instead, so a bound in the year 3000 is simply
// later than every stored time.
package unixnano

import (
	"math"
	"time"
)

var (
	earliest = time.Unix(0, math.MinInt64)
	latest   = time.Unix(0, math.MaxInt64)
)

// Of is t in Unix nanoseconds, saturated at the int64 range.
func Of(t time.Time) int64 {
	switch {
	case t.Before(earliest):
		return math.MinInt64
	case t.After(latest):
		return math.MaxInt64
	}
	return t.UnixNano()
}
