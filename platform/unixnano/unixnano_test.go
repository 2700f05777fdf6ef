package unixnano

import (
	"math"
	"testing"
	"time"
)

func TestOfSaturates(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
		{time.Unix(0, math.MaxInt64), math.MaxInt64},
		{time.Unix(0, math.MinInt64), math.MinInt64},
		{time.Unix(1700000000, 5), 1700000000_000000005},
	} {
		if got := Of(c.at); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.at, got, c.want)
		}
	}
}
