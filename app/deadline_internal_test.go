package app

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
	"github.com/countersvc/countersvc/keys"
)

// waitingService is a counters.Service whose increments never get an
// answer, as a request's wait for a round that a hung MySQL holds: they
// end only when their context does, as the coalescer's wait does.
type waitingService struct {
	counters.Service
	deadline chan time.Time // each increment's deadline, or the zero time
}

func (s waitingService) IncrementWith(ctx context.Context, _ string, _ int64, _ counters.Extra) (int64, error) {
	d, _ := ctx.Deadline()
	s.deadline <- d
	select {
	case <-ctx.Done():
		return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", ctx.Err(), "The database did not answer in time; nothing was changed.")
	case <-time.After(10 * time.Second):
		return 0, counters.Errorf(counters.EINTERNAL, "the request's context did not end")
	}
}

// An increment whose answer never comes ends with 503 unavailable at its
// deadline, DBTimeout from its start and at most a step of the shared
// deadlines later: its context ends, though no timer of its own runs.
func TestAnIncrementThatGetsNoAnswerEnds503AtItsDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	svc := waitingService{deadline: make(chan time.Time, 1)}
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Counters: svc, DBTimeout: timeout,
		Keys: keys.New(nil, keys.Options{AdminToken: "t"}), Capabilities: []Capability{PageHits(nil, nil, nil)}})
	req := httptest.NewRequest("POST", "/v1/counters/waits/increment", nil)
	req.Header.Set("Authorization", "Bearer t")
	start := time.Now()
	res, err := a.Test(req, -1)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 503 {
		t.Fatalf("%d %s, want 503 unavailable", res.StatusCode, body)
	}
	if took < timeout || took > timeout+1500*time.Millisecond {
		t.Errorf("the request took %v with a deadline of %v", took, timeout)
	}
	d := <-svc.deadline
	if d.IsZero() {
		t.Fatal("the increment's context has no deadline")
	}
	if early, late := start.Add(timeout), time.Now().Add(timeout+deadline.MaxStep); d.Before(early) || d.After(late) {
		t.Errorf("the deadline was %v after the request's start, want %v to %v", d.Sub(start), timeout, timeout+deadline.MaxStep)
	}
}
