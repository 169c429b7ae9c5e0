package hits

import "github.com/prometheus/client_golang/prometheus"

// The calls to the limits, the label of counters_hits_limit_errors_total.
const (
	callAdmit   = "admit"   // the hit went through unchecked
	callCreated = "created" // a repeat may not count after the counter is deleted
	callForget  = "forget"  // a failed hit's retry may be taken for a repeat
	callSalt    = "salt"    // the day's salt could not be read: unchecked, no visitor
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
			Help: "Calls to the page-hit limits that failed, by call: admit (the hit was counted unchecked), created, forget, salt (unchecked, and no visitor).",
		}, []string{"call"}),
	}
	if reg != nil {
		reg.MustRegister(hits, m.limitErrors)
	}
	return m
}
