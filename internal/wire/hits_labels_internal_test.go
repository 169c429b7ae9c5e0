package wire

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// A page hit is labelled only when its labels are counted: with
// breakdowns off, or history off (which breakdowns are made of), the
// store drops labels, so a hit must not pay for its User-Agent's parse and
// its country's look-up. A GeoIP file that does not exist shows whether
// the labeller was built: only a labeller opens it.
func TestPageHitsAreLabelledOnlyWhenLabelsAreCounted(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.mmdb")
	tests := []struct {
		name                string
		breakdowns, history bool
		want                bool
	}{
		{"breakdowns and history on", true, true, true},
		{"history off", true, false, false},
		{"breakdowns off", false, true, false},
		{"both off", false, false, false},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Breakdowns.On, cfg.History.On = tt.breakdowns, tt.history
			l, err := hitLabeller(cfg, nil, log)
			if err != nil || (l != nil) != tt.want {
				t.Fatalf("labeller %v, error %v; want one: %v", l != nil, err, tt.want)
			}
			cfg.Hits.GeoIPDB = missing
			if _, err := hitLabeller(cfg, nil, log); (err != nil) != tt.want {
				t.Fatalf("with a missing COUNTERS_GEOIP_DB: error %v; want one: %v", err, tt.want)
			}
		})
	}
}
