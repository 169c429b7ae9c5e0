// Package stats holds the one percentile that the benchmark and the tests
// that report figures share.
package stats

import (
	"cmp"
	"slices"
)

// Percentile returns the element of xs at rank p (0 to 100) in the order
// of key; it sorts a copy. It picks a measured element and never
// interpolates between two, so that the median run's rate, latencies and
// request count still describe one run.
func Percentile[T any, K cmp.Ordered](xs []T, p int, key func(T) K) T {
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[min(len(s)*p/100, len(s)-1)]
}
