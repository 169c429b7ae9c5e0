package cache

import "github.com/prometheus/client_golang/prometheus"

// Views, the label that says which read a metric counts.
const (
	viewCounter = "counter"
	viewList    = "list"
)

// Reasons a read bypassed Redis.
const (
	reasonUnavailable = "unavailable" // Redis failed, timed out, or the circuit is open
)

type metrics struct {
	hits       *prometheus.CounterVec // view
	misses     *prometheus.CounterVec // view
	errors     *prometheus.CounterVec // op
	fallbacks  *prometheus.CounterVec // view, reason
	conflicts  prometheus.Counter
	leaseWaits *prometheus.CounterVec // op

	counter, list viewMetrics
}

// viewMetrics are the series of one view, looked up once rather than on
// every read (and so exported at 0 from the start).
type viewMetrics struct {
	hits, misses, unavailable prometheus.Counter
}

func (m *metrics) view(v string) viewMetrics {
	return viewMetrics{
		hits:        m.hits.WithLabelValues(v),
		misses:      m.misses.WithLabelValues(v),
		unavailable: m.fallbacks.WithLabelValues(v, reasonUnavailable),
	}
}

func newMetrics(reg prometheus.Registerer, s *Store) *metrics {
	m := &metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_cache_hits_total",
			Help: "Reads answered from Redis, by view.",
		}, []string{"view"}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_cache_misses_total",
			Help: "Reads that found no usable entry in Redis and read MySQL, by view.",
		}, []string{"view"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_cache_errors_total",
			Help: "Redis calls that failed or timed out, by operation.",
		}, []string{"op"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_cache_fallbacks_total",
			Help: "Reads served from MySQL without Redis, by view and reason (unavailable).",
		}, []string{"view", "reason"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_cache_fill_conflicts_total",
			Help: "Cache fills refused because a write invalidated the entry after the reader looked.",
		}),
		leaseWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_cache_lease_waits_total",
			Help: "Answers held back until the cache lease ran out, by op: writes whose invalidation Redis did not confirm, reads from MySQL that Redis did not store.",
		}, []string{"op"}),
	}
	m.counter, m.list = m.view(viewCounter), m.view(viewList)
	if reg == nil {
		return m
	}
	reg.MustRegister(m.hits, m.misses, m.errors, m.fallbacks, m.conflicts, m.leaseWaits,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "counters_cache_circuit_open",
			Help: "1 while Redis is skipped after repeated failures, 0 while it is used.",
		}, func() float64 {
			if s.circuitOpen() {
				return 1
			}
			return 0
		}),
	)
	return m
}
