package hits

import "github.com/prometheus/client_golang/prometheus"

// The limits, the label of counters_hits_limit_errors_total.
const (
	limitRate  = "rate_limit"
	limitDedup = "dedup"
)

type metrics struct {
	counted, repeat, rateLimited prometheus.Counter // counters_hits_total by result
	limitErrors                  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "counters_hits_total",
		Help: "Public page hits by result: counted, repeat (answered without counting) or rate_limited.",
	}, []string{"result"})
	m := &metrics{
		counted:     hits.WithLabelValues("counted"),
		repeat:      hits.WithLabelValues("repeat"),
		rateLimited: hits.WithLabelValues("rate_limited"),
		limitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_hits_limit_errors_total",
			Help: "Hits let through unchecked because Redis failed, by limit (rate_limit, dedup).",
		}, []string{"limit"}),
	}
	if reg != nil {
		reg.MustRegister(hits, m.limitErrors)
	}
	return m
}
