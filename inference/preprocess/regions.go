package preprocess

import "fmt"

// MaxRegions is the contract's maxItems of TrainingMeta.regions.
const MaxRegions = 64

// regionRange returns the index range [lo, hi] of the axis points inside
// the inclusive region, which must have low <= high and lie inside
// [axis[0], axis[len-1]]. hi < lo when it holds no point.
func regionRange(field string, region [2]float64, axis []float64) (lo, hi int, err error) {
	low, high := region[0], region[1]
	first, last := axis[0], axis[len(axis)-1]
	switch {
	case !(low <= high):
		return 0, -1, fieldErr(field, "low %v is above high %v (or not a number)", low, high)
	case low < first || high > last:
		return 0, -1, fieldErr(field, "[%v, %v] is outside the axis [%v, %v]", low, high, first, last)
	}
	lo = 0
	for lo < len(axis) && axis[lo] < low {
		lo++
	}
	hi = len(axis) - 1
	for hi >= 0 && axis[hi] > high {
		hi--
	}
	return lo, hi, nil
}

// SelectRegions returns the sorted indices of the axis points inside any
// of the inclusive ranges (overlaps merged). Errors wrap ErrInvalidRecipe
// and name the range, "regions[i]": low > high, a range reaching outside
// [axis[0], axis[len-1]], or one holding no axis point. No region selects
// every point; more than MaxRegions is an error too. The axis is checked
// as by CheckAxis.
func SelectRegions(axis []float64, regions [][2]float64) ([]int, error) {
	if err := CheckAxis(axis); err != nil {
		return nil, err
	}
	if len(regions) > MaxRegions {
		return nil, fieldErr("regions", "%d ranges, at most %d", len(regions), MaxRegions)
	}
	in := make([]bool, len(axis))
	if len(regions) == 0 {
		for i := range in {
			in[i] = true
		}
	}
	for r, region := range regions {
		field := fmt.Sprintf("regions[%d]", r)
		lo, hi, err := regionRange(field, region, axis)
		if err != nil {
			return nil, err
		}
		if hi < lo {
			return nil, fieldErr(field, "[%v, %v] holds no axis point", region[0], region[1])
		}
		for i := lo; i <= hi; i++ {
			in[i] = true
		}
	}
	var idx []int
	for i, ok := range in {
		if ok {
			idx = append(idx, i)
		}
	}
	return idx, nil
}
