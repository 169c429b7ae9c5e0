package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// The alerts scenario: what rate and silence alerts cost increments and
// page hits. On an instance that evaluates every alert every 5 s
// (COUNTERS_WEBHOOK_ALERTS_EVERY=5s, six times as often as by default, so
// that most runs of a few seconds hold a pass), the hot counter and page hits are
// measured with alertHooks alerts registered and with none, alternating:
// each run first registers or deletes them. The alerts watch the hot
// counter's name and the prefixes of both loads, over windows from 5
// minutes to 7 days.
const alertHooks = 100

type alertsResult struct {
	hot, hotNone, hits, hitsNone load
}

func (b *bench) alerts() error {
	url := *b.urls["alerts"]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := b.deleteHooks(ctx, url); err != nil { // an earlier run's
		return err
	}
	defer b.deleteHooks(context.Background(), url)
	registered := false
	with := func(on bool, m measure) measure {
		return measure{m.name, func(d time.Duration) (load, error) {
			if on != registered {
				if err := b.setAlerts(ctx, url, on); err != nil {
					return load{}, err
				}
				registered = on
				time.Sleep(1500 * time.Millisecond) // a pass with them, or without
			}
			return m.run(d)
		}}
	}
	ms := []measure{
		with(true, b.wrk("hot counter, 100 alerts", url+hotPath, targetConns, postScript)),
		with(false, b.wrk("hot counter, no alert", url+hotPath, targetConns, postScript)),
		with(true, b.wrk("page hits, 100 alerts", url+hitsPath, targetConns, visitorsScript)),
		with(false, b.wrk("page hits, no alert", url+hitsPath, targetConns, visitorsScript)),
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	b.r.alerts = &alertsResult{hot: rs[0].byRPS(), hotNone: rs[1].byRPS(), hits: rs[2].byRPS(), hitsNone: rs[3].byRPS()}
	return nil
}

// setAlerts registers alertHooks alerts on the instance, or deletes every
// hook of it.
func (b *bench) setAlerts(ctx context.Context, url string, on bool) error {
	if !on {
		return b.deleteHooks(ctx, url)
	}
	windows := []string{"5m", "1h", "6h", "7d"}
	for i := range alertHooks {
		target := `"name": "bench/hot"`
		switch i % 3 {
		case 1:
			target = `"prefix": "bench/"`
		case 2:
			target = `"prefix": "hits/bench/"`
		}
		cond := fmt.Sprintf(`"above": %d`, 1+i)
		if i%2 == 1 {
			cond = `"below": 1`
		}
		body := fmt.Sprintf(`{"url": "https://93.184.215.14/never", %s, "window": %q, %s}`, target, windows[i%len(windows)], cond)
		if _, err := call(ctx, b.client, "POST", url+"/v1/webhooks", body, http.StatusCreated); err != nil {
			return fmt.Errorf("registering the alerts: %w", err)
		}
	}
	return nil
}
