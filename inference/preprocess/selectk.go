package preprocess

import "math/bits"

// median returns the median of a (the mean of the two middle values when
// len(a) is even, as numpy.median), reordering a. O(len(a)) expected and
// O(len(a) log len(a)) at worst; it allocates nothing and terminates on
// any input, NaN included (the result is then unspecified).
func median(a []float64) float64 {
	n := len(a)
	if n == 0 {
		return 0
	}
	k := n / 2
	hi := selectK(a, k)
	if n%2 == 1 {
		return hi
	}
	// After selectK every a[:k] <= a[k]: the lower middle is their maximum.
	lo := a[0]
	for _, v := range a[1:k] {
		if v > lo {
			lo = v
		}
	}
	return (lo + hi) / 2
}

// selectK reorders a so that a[k] is its k-th smallest value, a[:k] holds
// values <= a[k] and a[k+1:] values >= a[k], and returns a[k]
// (introselect: quickselect with a median-of-three pivot and a three-way
// partition, falling back to heapsort when the pivots keep choosing badly,
// so that no crafted spectrum makes it quadratic).
func selectK(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	budget := 2*bits.Len(uint(len(a))) + 4
	for hi > lo {
		if budget == 0 {
			heapSort(a[lo : hi+1])
			return a[k]
		}
		budget--
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		// a[lo:lt] < pivot, a[lt:i] == pivot, a[gt+1:hi+1] > pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch v := a[i]; {
			case v < pivot:
				a[lt], a[i] = v, a[lt]
				lt++
				i++
			case v > pivot:
				a[gt], a[i] = v, a[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return a[k]
		}
	}
	return a[k]
}

func heapSort(a []float64) {
	n := len(a)
	for i := n/2 - 1; i >= 0; i-- {
		siftDown(a, i, n)
	}
	for end := n - 1; end > 0; end-- {
		a[0], a[end] = a[end], a[0]
		siftDown(a, 0, end)
	}
}

func siftDown(a []float64, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && a[child] < a[child+1] {
			child++
		}
		if !(a[root] < a[child]) {
			return
		}
		a[root], a[child] = a[child], a[root]
		root = child
	}
}
