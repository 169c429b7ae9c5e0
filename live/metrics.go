package live

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	open          prometheus.Gauge
	events        prometheus.Counter
	refused       *prometheus.CounterVec
	reads         *prometheus.CounterVec
	readErrors    prometheus.Counter
	checks        prometheus.Counter
	missed        prometheus.Counter
	published     prometheus.Counter
	publishErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "counters_live_streams",
			Help: "Live-update streams open on this process.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_events_total",
			Help: "Live-update events sent (counter and deleted), all streams.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_live_refused_total",
			Help: "Live-update streams refused (429) by cap: address or total.",
		}, []string{"cap"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_live_reads_total",
			Help: "Reads of watched counters from MySQL, by cause: changed (a change was heard of) or check (the bounded interval, or notices may have been missed).",
		}, []string{"cause"}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_read_errors_total",
			Help: "Reads of watched counters from MySQL that failed (the next check reads them again).",
		}),
		checks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_checks_total",
			Help: "Checks of every watched counter against MySQL.",
		}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_resubscriptions_total",
			Help: "Subscriptions to other processes' notices, the first included: each is followed by a check, since notices may have been missed.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_notices_published_total",
			Help: "Names of changed counters published to the other processes.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "counters_live_transport_errors_total",
			Help: "Notices and watches that could not be sent to the other processes (their checks find the changes).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.events, m.refused, m.reads, m.readErrors, m.checks, m.missed, m.published, m.publishErrors)
	}
	return m
}
