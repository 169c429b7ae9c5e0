package main

import (
	"cmp"

	"github.com/countersvc/countersvc/internal/stats"
)

// percentile is stats.Percentile: the element of xs at rank p (0 to 100)
// in the order of key, never an interpolation.
func percentile[T any, K cmp.Ordered](xs []T, p int, key func(T) K) T {
	return stats.Percentile(xs, p, key)
}

// median is the middle element of xs in the order of key (of an even
// count, the upper of the two).
func median[T any, K cmp.Ordered](xs []T, key func(T) K) T { return percentile(xs, 50, key) }

// runs are the repetitions of one measurement.
type runs []load

// byRPS is the run with the median rate. It carries the bad answers of
// every run: a failure in any repetition must show in the report.
func (rs runs) byRPS() load { return rs.withAllBad(median(rs, func(l load) float64 { return l.RPS })) }

// byP50 is the run with the median p50 latency, carrying every run's bad
// answers like byRPS.
func (rs runs) byP50() load {
	return rs.withAllBad(median(rs, func(l load) int64 { return int64(l.P50) }))
}

func (rs runs) withAllBad(m load) load {
	m.Bad = 0
	for _, r := range rs {
		m.Bad += r.Bad
	}
	return m
}

// alternate runs each measurement once per repetition, in turn, and
// returns the runs of each. Measurements that are compared alternate so
// that what one leaves behind (MySQL's purge of its undo log, a busy
// neighbour on the shared machine) weighs on all of them alike.
func alternate(reps int, measures ...func() (load, error)) ([]runs, error) {
	out := make([]runs, len(measures))
	for range reps {
		for i, measure := range measures {
			l, err := measure()
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], l)
		}
	}
	return out, nil
}
