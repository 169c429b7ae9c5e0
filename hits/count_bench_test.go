package hits_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
)

// nopCounters counts nothing and allocates nothing: what Count costs
// beside its increment.
type nopCounters struct{ counters.Service }

func (nopCounters) Increment(context.Context, string, int64) (int64, error) { return 2, nil }
func (nopCounters) IncrementWith(context.Context, string, int64, counters.Extra) (int64, error) {
	return 2, nil
}

// nopLimits admit every hit as a first.
type nopLimits struct{}

func (nopLimits) Checks(bool) bool { return true }
func (nopLimits) Admit(context.Context, hits.Hit) (time.Duration, hits.Earlier, error) {
	return 0, hits.None, nil
}
func (nopLimits) Created(context.Context, hits.Hit) error { return nil }
func (nopLimits) Forget(context.Context, hits.Hit) error  { return nil }

// What a counted page hit costs the service beside its increment and its
// limits' round trip, with the defaults: its client's identifiers, its
// labels, its crawler test: each hit another address, of a few agents
// and referrers, as the bench sends them.
func BenchmarkCount(b *testing.B) {
	svc := hits.New(nopCounters{}, nopLimits{}, hits.Options{Labels: hits.NewLabeller(table, nil)})
	agents := []string{uaChromeWindows, uaSafariIPhone, uaFirefoxLinux, uaChromeAndroid, uaEdgeWindows, uaSafariMac}
	referers := []string{"https://www.google.com/", "https://news.example.com/item?id=1", "https://t.co/abc123", ""}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := hits.Visit{Name: "hits/bench/page", Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}),
			UserAgent: agents[i%len(agents)], Referer: referers[i%len(referers)]}
		if _, err := svc.Count(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}

// startingLimits admit every hit as a first and start its increment, as
// the cache's limits do.
type startingLimits struct{ nopLimits }

func (startingLimits) Admit(_ context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	if h.Chain.Claim() {
		hits.Start([]*hits.Chain{h.Chain})
	}
	return 0, hits.None, nil
}

// nopStarter answers every increment at once.
type nopStarter struct{}

func (nopStarter) Start(cs []*hits.Chain) {
	for _, c := range cs {
		close(c.Done)
	}
}
func (nopStarter) Result(*hits.Chain) (int64, error) { return 2, nil }

// What the hand-over of a hit's increment from its limits (hits.Chain)
// adds to BenchmarkCount's hit: the allocations of the chain.
func BenchmarkCountChained(b *testing.B) {
	svc := hits.New(nopCounters{}, startingLimits{}, hits.Options{Labels: hits.NewLabeller(table, nil), Chain: nopStarter{}})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := hits.Visit{Name: "hits/bench/page", Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}),
			UserAgent: uaChromeWindows, Referer: "https://www.google.com/"}
		if _, err := svc.Count(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}
