package coalesce

import "github.com/prometheus/client_golang/prometheus"

// metrics say whether coalescing works under the load at hand: how many
// statements of each kind the coalescer sent ("alone": a request that found
// the service idle; "counter": one counter's queued increments; "many":
// several counters in one transaction; "split": one request of a round that
// had to be split) and how many increments each carried.
type metrics struct {
	statements *prometheus.CounterVec
	carried    *prometheus.HistogramVec
}

// newMetrics registers the metrics with reg, and the gauge of how many
// rounds may run at once now (limit); with reg nil they are kept but not
// exported.
func newMetrics(reg prometheus.Registerer, limit func() int) *metrics {
	m := &metrics{
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_coalesce_statements_total",
			Help: "Increment statements sent by the coalescer, by kind (alone, counter, many, split).",
		}, []string{"kind"}),
		carried: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "counters_coalesce_increments_per_statement",
			Help:    "Increments carried by one coalesced statement, by kind.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.statements, m.carried, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "counters_coalesce_rounds_limit",
			Help: "How many coalesced statements may run at once, as the coalescer has found from the database's throughput.",
		}, func() float64 { return float64(limit()) }))
	}
	return m
}

func (m *metrics) observe(kind string, increments int) {
	m.statements.WithLabelValues(kind).Inc()
	m.carried.WithLabelValues(kind).Observe(float64(increments))
}
