package benchrun

import (
	"cmp"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 to 100) of lat, the sample at
// index (len-1)*p/100 of a sorted copy. lat must not be empty.
func Percentile(lat []time.Duration, p int) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// Quantile returns the q quantile (0 to 1) of d, the sample at index
// min(len-1, int(q*len)) of a sorted copy: not the index [Percentile]
// takes, so that each program keeps its figures. d must not be empty.
func Quantile[T cmp.Ordered](d []T, q float64) T {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}
