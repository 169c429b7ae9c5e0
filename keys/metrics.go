package keys

import "github.com/prometheus/client_golang/prometheus"

// Why a request was refused. The metric is labelled by these only, never
// by key or counter name: those are unbounded, and a key's name is the
// operator's business.
const (
	reasonMissing = "missing" // no credentials where they are needed
	reasonUnknown = "unknown" // a bearer that is no key and not the token
	reasonRevoked = "revoked"
	reasonExpired = "expired"
	reasonScope   = "scope" // a known key outside its scopes, prefixes or companies
)

type metrics struct {
	failures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{failures: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "counters_auth_failures_total",
		Help: "Requests refused by authentication (401) or a key's scope (403), by reason.",
	}, []string{"reason"})}
	for _, r := range []string{reasonMissing, reasonUnknown, reasonRevoked, reasonExpired, reasonScope} {
		m.failures.WithLabelValues(r) // every reason is shown, 0 until it happens
	}
	if reg != nil {
		reg.MustRegister(m.failures)
	}
	return m
}

func (m *metrics) fail(reason string) { m.failures.WithLabelValues(reason).Inc() }
