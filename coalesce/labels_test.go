package coalesce_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/storage"
)

// Labelled increments coalesce: queued behind a statement in flight, they
// run as one round, each waiter gets the value of its own step, and every
// label's values add up to the steps that carried them.
func TestLabelledIncrementsCoalesceAndCountTheirLabels(t *testing.T) {
	store := mustStore(t)
	store.Count(storage.Labels(true, 0))
	gated := newGated(store)
	co := coalesce.New(gated, coalesce.Options{})
	svc := counters.NewService(counters.BackendOf(co))
	ctx := context.Background()

	done := make(chan error, 1)
	go func() { _, err := svc.Increment(ctx, "blocker", 1); done <- err }()
	<-gated.entered // in flight: what follows queues
	const n = 30
	values := make(chan int64, n)
	errs := make(chan error, n)
	for i := range n {
		labels := breakdowns.Labels{"referrer": fmt.Sprintf("site%d", i%4)}
		if i%5 == 0 {
			labels = nil // an unlabelled one among them
		}
		go func() {
			v, err := svc.IncrementWith(ctx, "page", 1, breakdowns.Of(labels))
			values <- v
			errs <- err
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); coalesce.Pending(co) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d increments queued, want %d", coalesce.Pending(co), n)
		}
	}
	close(gated.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []int64
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		got = append(got, <-values)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("values %v, want 1 to %d, one each", got, n)
		}
	}

	day, _ := history.QuarterOf(time.Now())
	c, err := storage.BreakdownsOf(store).Counts(ctx, "page", "", "referrer", day.AddDate(0, 0, -1), day.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"site0": 6, "site1": 6, "site2": 6, "site3": 6}
	for v, w := range want {
		if c.Values[v] == nil || c.Values[v].Int64() != w {
			t.Errorf("referrer %s: %v, want %d", v, c.Values[v], w)
		}
	}
	if len(c.Values) != len(want) || c.Total.Int64() != n {
		t.Errorf("values %v, total %v; want %v of %d", c.Values, c.Total, want, n)
	}
}
