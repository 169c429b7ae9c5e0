package main

import "github.com/prometheus/client_golang/prometheus"

// coalesceMetrics exports what the coalescer reports: how many statements
// of each kind it sent and how many increments each carried, which is what
// says whether batching works under the load at hand.
func coalesceMetrics(reg prometheus.Registerer) func(kind string, counters, increments int) {
	statements := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "counters_coalesce_statements_total",
		Help: "Increment statements sent by the coalescer, by kind (alone, counter, many, split).",
	}, []string{"kind"})
	carried := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "counters_coalesce_increments_per_statement",
		Help:    "Increments carried by one coalesced statement, by kind.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	}, []string{"kind"})
	reg.MustRegister(statements, carried)
	return func(kind string, _, increments int) {
		statements.WithLabelValues(kind).Inc()
		carried.WithLabelValues(kind).Observe(float64(increments))
	}
}
