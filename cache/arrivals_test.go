package cache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/testenv"
)

// awaiter is a hits.Starter that keeps the Arrivals it is told of.
type awaiter struct{ a atomic.Pointer[hits.Arrivals] }

func (*awaiter) Start(cs []*hits.Chain) {
	for _, c := range cs {
		close(c.Done)
	}
}
func (*awaiter) Result(*hits.Chain) (int64, error) { return 0, nil }
func (w *awaiter) Await(a hits.Arrivals)           { w.a.Store(&a) }

// While a limits pipeline with page hits that it may start is in Redis,
// the increments' queue joined to the store (Store.Starter) is told that
// they are on their way, to which counter and how many; once its answer
// is read and they are handed on, that they have landed.
func TestTheHitsOfALimitsPipelineInRedisAreOnTheirWay(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	c := cache.New(counters.Backend{}, r.DeadlineClient(t), cache.Options{Timeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	var w awaiter
	c.Starter(&w)
	a := w.a.Load()
	if a == nil {
		t.Fatal("the store did not tell a Starter that awaits of the hits on their way")
	}
	l := cache.NewHitLimits(c, cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: 30 * time.Second})

	raw := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { raw.Close() })
	if err := raw.Do(context.Background(), "CLIENT", "PAUSE", 1000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	var ch *hits.Chain
	ch = hits.NewChain(func() { close(ch.Done) })
	ch.Ctx, ch.Name = context.Background(), "hits/a"
	admitted := make(chan error, 1)
	go func() {
		_, _, err := l.Admit(context.Background(), hits.Hit{Client: "client", Visitor: "visitor", Name: "hits/a", Chain: ch})
		admitted <- err
	}()
	var landed <-chan struct{}
	for deadline := time.Now().Add(900 * time.Millisecond); landed == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hit held in Redis was never on its way")
		}
		var n int
		if landed, n, _ = (*a).Arriving("hits/a"); landed != nil && n != 1 {
			t.Errorf("%d hits on their way, want 1", n)
		}
	}
	if other, _, _ := (*a).Arriving("hits/b"); other != nil {
		t.Error("hits on their way to another counter")
	}
	select {
	case <-landed:
	case <-time.After(10 * time.Second):
		t.Fatal("not landed within 10 s of the pause")
	}
	if err := <-admitted; err != nil {
		t.Fatal(err)
	}
	if again, _, _ := (*a).Arriving("hits/a"); again != nil {
		t.Error("still on their way once landed")
	}
}
