package storage_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/webhooks"
)

// hooked is a store with the webhooks' recorder registered, as
// internal/wire registers it, and hooks made directly in the store.
type hooked struct {
	store *storage.CounterStore
	hooks *storage.HookStore
	rec   *storage.HookRecorder
}

func newHooked(t *testing.T) *hooked {
	t.Helper()
	return newHookedOn(t, storetest.MigratedDSN(t))
}

// newHookedOn is newHooked on the database of dsn: two of them on one
// database are two processes of the service.
func newHookedOn(t *testing.T, dsn string) *hooked {
	t.Helper()
	store, db := storetest.OpenStore(t, dsn)
	h := &hooked{store: store}
	h.hooks = storage.NewHookStore(db, func(ctx context.Context) {
		if err := h.rec.Reload(ctx); err != nil {
			t.Error(err)
		}
	})
	h.rec = storage.NewHookRecorder(h.hooks, nil)
	store.Record(h.rec)
	store.Observe(h.rec)
	return h
}

func (h *hooked) hook(t *testing.T, req webhooks.CreateRequest) *webhooks.Hook {
	t.Helper()
	req.URL = "https://receiver.example/hook"
	hook, err := req.Validate()
	if err != nil {
		t.Fatal(err)
	}
	hook.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	if err := h.hooks.CreateHook(context.Background(), hook, 100); err != nil {
		t.Fatal(err)
	}
	return hook
}

// events are the hook's events' data, oldest first.
func (h *hooked) events(t *testing.T, hookID int64) []webhooks.EventData {
	t.Helper()
	var out []webhooks.EventData
	for _, e := range recorded[webhooks.Event](t, h.hooks, hookID) {
		out = append(out, e.Data)
	}
	return out
}

// recorded are the events of the hook in the outbox, oldest first, as E.
func recorded[E any](t *testing.T, hooks *storage.HookStore, hookID int64) []E {
	t.Helper()
	ds, err := hooks.Deliveries(context.Background(), hookID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []E
	for _, d := range slices.Backward(ds) {
		var e E
		if err := json.Unmarshal(d.Event, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// A coalesced round (one Increment carrying 64 steps, as the coalescer
// sends it) that takes a counter over 1,000 records one event, with the
// exact values before and after the round.
func TestACoalescedRoundThatCrossesRecordsOneEventWithExactValues(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "books/Round", Thresholds: []int64{1000}})
	set(t, h.store, "books/Round", 990)
	parts := make([]counters.Part, 64)
	for i := range parts {
		parts[i] = counters.Part{At: time.Now().UTC(), By: 1}
	}
	if _, err := h.store.IncrementMany(context.Background(), []counters.Increment{{Name: "books/Round", By: 64, Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	want := []webhooks.EventData{{Name: "books/Round", Threshold: 1000, Direction: webhooks.Up, Previous: 990, Value: 1054}}
	if got := h.events(t, hook.ID); !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func ev(name string, threshold int64, d webhooks.Direction, prev, value int64) webhooks.EventData {
	return webhooks.EventData{Name: name, Threshold: threshold, Direction: d, Previous: prev, Value: value}
}

// Each write path that can cross records its crossings; paths that do not
// cross record nothing, and a deletion never does.
func TestEveryWritePathRecordsItsCrossingsAndNothingElse(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Prefix: "stock/", Thresholds: []int64{0, 10}, Direction: webhooks.Both})
	ctx := context.Background()
	keep := counters.Bound{Keep: true}
	steps := []struct {
		name  string
		write func() error
		want  []webhooks.EventData
	}{
		{"a set from 0 to 5 crosses nothing", func() error {
			_, _, err := h.store.Set(ctx, counters.SetRequest{Name: "stock/a", Value: 5, Min: keep, Max: keep})
			return err
		}, nil},
		{"an increment to 10 crosses 10 up", func() error { _, err := h.store.Increment(ctx, "stock/a", 5); return err },
			[]webhooks.EventData{ev("stock/a", 10, webhooks.Up, 5, 10)}},
		{"an increment within the range crosses nothing", func() error { _, err := h.store.Increment(ctx, "stock/a", 3); return err }, nil},
		{"a batch down to 0 crosses 10 and 0 down", func() error {
			_, err := h.store.Batch(ctx, []counters.Increment{{Name: "stock/a", By: -13}, {Name: "other/x", By: -100}})
			return err
		}, []webhooks.EventData{ev("stock/a", 10, webhooks.Down, 13, 0), ev("stock/a", 0, webhooks.Down, 13, 0)}},
		{"a reset from 0 to 20 crosses 10 up, not 0 (it left 0)", func() error {
			_, err := h.store.Reset(ctx, counters.ResetRequest{Prefix: "stock/", Value: 20})
			return err
		}, []webhooks.EventData{ev("stock/a", 10, webhooks.Up, 0, 20)}},
		{"a deletion crosses nothing", func() error { return h.store.Delete(ctx, "stock/a") }, nil},
		{"an idempotent increment of a new counter to 10 crosses 10", func() error {
			_, _, err := h.store.IncrementOnce(ctx, counters.Idempotency{Key: "wh-1"}, "stock/b", 10)
			return err
		}, []webhooks.EventData{ev("stock/b", 10, webhooks.Up, 0, 10)}},
	}
	var seen int
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := h.events(t, hook.ID)[seen:]
		seen += len(got)
		if !slices.Equal(got, s.want) {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
}

// An increment of a watched counter that its hooks' quiet range allows is
// one statement with no recorder; one that leaves the range, or starts
// from a value another process left outside it, or finds no counter, is
// written with the recorder. Either way every crossing is recorded once,
// with exact values, and the values answered are the counter's.
func TestQuietIncrementsRecordEveryCrossingOnceWhateverTheOtherProcessDid(t *testing.T) {
	t.Parallel()
	dsn := storetest.MigratedDSN(t)
	a, b := newHookedOn(t, dsn), newHookedOn(t, dsn)
	hook := a.hook(t, webhooks.CreateRequest{Name: "stock/q", Thresholds: []int64{0, 10}, Every: 100, Direction: webhooks.Both})
	if err := b.rec.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inc := func(h *hooked, by int64) func() (int64, error) {
		return func() (int64, error) { return h.store.Increment(ctx, "stock/q", by) }
	}
	steps := []struct {
		name  string
		write func() (int64, error)
		value int64
		want  []webhooks.EventData
	}{
		{"a new counter from 0 to 3 leaves 0 up, which crosses nothing", inc(a, 3), 3, nil},
		{"within the range", inc(a, 4), 7, nil},
		{"within the range again", inc(a, 2), 9, nil},
		{"to 10, past the range", inc(a, 1), 10, []webhooks.EventData{ev("stock/q", 10, webhooks.Up, 9, 10)}},
		{"the other process takes it to 150, past 100", inc(b, 140), 150, []webhooks.EventData{ev("stock/q", 100, webhooks.Up, 10, 150)}},
		{"this process, its range around 10, steps from 150 within 150's", inc(a, 5), 155, nil},
		{"down to 95 crosses 100 down", inc(a, -60), 95, []webhooks.EventData{ev("stock/q", 100, webhooks.Down, 155, 95)}},
		{"deleted by the other process", func() (int64, error) { return 0, b.store.Delete(ctx, "stock/q") }, 0, nil},
		{"created anew from 0 to 12: crosses 10 up", inc(a, 12), 12, []webhooks.EventData{ev("stock/q", 10, webhooks.Up, 0, 12)}},
		{"down to -1 crosses 10 and 0 down", inc(a, -13), -1, []webhooks.EventData{ev("stock/q", 10, webhooks.Down, 12, -1), ev("stock/q", 0, webhooks.Down, 12, -1)}},
		{"a step of 0 crosses nothing", inc(a, 0), -1, nil},
	}
	var seen int
	for _, s := range steps {
		v, err := s.write()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if v != s.value {
			t.Fatalf("%s: answered %d, want %d", s.name, v, s.value)
		}
		got := a.events(t, hook.ID)[seen:]
		seen += len(got)
		if !slices.Equal(got, s.want) {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
	if got := value(t, a.store, "stock/q"); got != -1 {
		t.Fatalf("stock/q = %d, want -1", got)
	}
}

// Processes claiming at once never lease one event twice, and a process
// whose lease was taken over records nothing.
func TestClaimsNeverShareAnEventAndAStaleLeaseRecordsNothing(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "claims/x", Every: 1})
	if _, err := h.store.Increment(context.Background(), "claims/x", 60); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				as, err := h.hooks.Claim(ctx, 4, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(as) == 0 {
					return
				}
				mu.Lock()
				for _, a := range as {
					seen[a.EventID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 60 {
		t.Fatalf("%d events claimed, want 60", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %d claimed %d times", id, n)
		}
	}

	// A lease that ran out is claimed again under a new token; the old
	// token's outcome is then ignored.
	if _, err := h.store.Increment(ctx, "claims/x", 1); err != nil {
		t.Fatal(err)
	}
	first, err := h.hooks.Claim(ctx, 1, time.Millisecond)
	if err != nil || len(first) != 1 {
		t.Fatalf("claim: %v %v", first, err)
	}
	time.Sleep(20 * time.Millisecond)
	second, err := h.hooks.Claim(ctx, 1, time.Minute)
	if err != nil || len(second) != 1 || second[0].EventID != first[0].EventID || second[0].MsgID != first[0].MsgID {
		t.Fatalf("claim after the lease: %v %v", second, err)
	}
	if err := h.hooks.Complete(ctx, first[0], webhooks.Outcome{Status: webhooks.Delivered, StatusCode: 200, Succeeded: true}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ds, _ := h.hooks.Deliveries(ctx, hook.ID, 1)
	if ds[0].Status != webhooks.Pending || ds[0].Attempts != 2 {
		t.Fatalf("after the stale lease's outcome: %+v", ds[0])
	}
	if err := h.hooks.Complete(ctx, second[0], webhooks.Outcome{Status: webhooks.Delivered, StatusCode: 204, Succeeded: true}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ds, _ = h.hooks.Deliveries(ctx, hook.ID, 1)
	if ds[0].Status != webhooks.Delivered || *ds[0].LastStatusCode != 204 || ds[0].NextAttemptAt != nil {
		t.Fatalf("after the live lease's outcome: %+v", ds[0])
	}
}

// A hook watches nothing once deleted; the recorder learns it from the
// store's change.
func TestADeletedHookRecordsNothing(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "gone/x", Thresholds: []int64{1}})
	if !h.rec.Wants("gone/x") || h.rec.Wants("gone/y") {
		t.Fatal("the recorder does not want exactly the hook's counter")
	}
	if err := h.hooks.DeleteHook(context.Background(), hook.ID); err != nil {
		t.Fatal(err)
	}
	if h.rec.Wants("gone/x") {
		t.Fatal("the recorder still wants a deleted hook's counter")
	}
}

// Finished events are purged once older than what is kept; pending ones
// never are.
func TestPurgeKeepsPendingAndRecentEvents(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "purge/x", Every: 1})
	ctx := context.Background()
	if _, err := h.store.Increment(ctx, "purge/x", 3); err != nil {
		t.Fatal(err)
	}
	claimed, err := h.hooks.Claim(ctx, 2, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	for _, a := range claimed {
		if err := h.hooks.Complete(ctx, a, webhooks.Outcome{Status: webhooks.Delivered, StatusCode: 200, Succeeded: true}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.hooks.PurgeEvents(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("purged %d recent events: %v", n, err)
	}
	time.Sleep(10 * time.Millisecond)
	if n, err := h.hooks.PurgeEvents(ctx, time.Millisecond); err != nil || n != 2 {
		t.Fatalf("purged %d of the 2 finished events: %v", n, err)
	}
	if ds, _ := h.hooks.Deliveries(ctx, hook.ID, 10); len(ds) != 1 || ds[0].Status != webhooks.Pending {
		t.Fatalf("left %+v", ds)
	}
}

// A hook whose attempts keep failing is disabled once the failures have
// lasted disableAfter; a success in between starts the count again.
func TestAHookFailingForLongEnoughIsDisabled(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "failing/x", Every: 1})
	ctx := context.Background()
	attempt := func(o webhooks.Outcome) {
		t.Helper()
		if _, err := h.store.Increment(ctx, "failing/x", 1); err != nil {
			t.Fatal(err)
		}
		as, err := h.hooks.Claim(ctx, 1, time.Minute)
		if err != nil || len(as) != 1 {
			t.Fatalf("claim: %v %v", as, err)
		}
		if err := h.hooks.Complete(ctx, as[0], o, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	failed := webhooks.Outcome{Status: webhooks.Pending, StatusCode: 500, Next: time.Hour}
	disabled := func() bool {
		got, err := h.hooks.Hook(ctx, hook.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.DisabledAt != nil
	}
	attempt(failed)
	time.Sleep(60 * time.Millisecond)
	attempt(webhooks.Outcome{Status: webhooks.Delivered, StatusCode: 200, Succeeded: true})
	attempt(failed)
	if disabled() {
		t.Fatal("disabled although a success came between the failures")
	}
	time.Sleep(60 * time.Millisecond)
	attempt(failed)
	if !disabled() {
		t.Fatal("still enabled after failing for longer than disableAfter")
	}
	if h.rec.Wants("failing/x") {
		t.Fatal("the recorder still wants a disabled hook's counter")
	}
}

// A rotation makes the new secret the hook's and keeps the one it replaced
// as the previous, with its grace, for the claims of the events that
// follow; rotating again drops the oldest, so that a hook has at most two
// secrets. A missing hook is ENOTFOUND and nothing changes.
func TestRotatingKeepsTheReplacedSecretAndDropsTheOldest(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "rotate/x", Every: 1})
	first := hook.Secret
	ctx := context.Background()
	claim := func() webhooks.Secrets {
		t.Helper()
		if _, err := h.store.Increment(ctx, "rotate/x", 1); err != nil {
			t.Fatal(err)
		}
		as, err := h.hooks.Claim(ctx, 1, time.Minute)
		if err != nil || len(as) != 1 {
			t.Fatalf("claim: %v %v", as, err)
		}
		return as[0].Secrets
	}
	if got := claim(); got != (webhooks.Secrets{Current: first}) {
		t.Fatalf("before any rotation the claim reads %+v", got)
	}

	until := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)
	steps := []struct {
		name, secret string
		want         webhooks.Secrets
	}{
		{"the first rotation", "whsec_c2Vjb25kc2Vjb25kc2Vjb25kc2Vjb25k", webhooks.Secrets{Current: "whsec_c2Vjb25kc2Vjb25kc2Vjb25kc2Vjb25k", Previous: first, PreviousUntil: until}},
		{"a rotation within the grace", "whsec_dGhpcmR0aGlyZHRoaXJkdGhpcmR0aGly", webhooks.Secrets{Current: "whsec_dGhpcmR0aGlyZHRoaXJkdGhpcmR0aGly", Previous: "whsec_c2Vjb25kc2Vjb25kc2Vjb25kc2Vjb25k", PreviousUntil: until.Add(time.Minute)}},
	}
	for _, s := range steps {
		got, err := h.hooks.RotateSecret(ctx, hook.ID, s.secret, s.want.PreviousUntil)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got.ID != hook.ID || got.Secret != s.secret || got.PreviousUntil == nil || !got.PreviousUntil.Equal(s.want.PreviousUntil) || got.Target != "rotate/x" {
			t.Fatalf("%s: returned %+v", s.name, got)
		}
		if claimed := claim(); claimed.Current != s.want.Current || claimed.Previous != s.want.Previous || !claimed.PreviousUntil.Equal(s.want.PreviousUntil) {
			t.Fatalf("%s: the claim reads %+v, want %+v", s.name, claimed, s.want)
		}
	}

	if _, err := h.hooks.RotateSecret(ctx, hook.ID+1000, "whsec_bm9uZW5vbmVub25lbm9uZW5vbmVub25l", until); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("rotating a missing hook: %v, want ENOTFOUND", err)
	}
}

// The purge forgets a previous secret once its grace has ended, not a
// microsecond before: no call signs with it any more.
func TestAPreviousSecretIsForgottenWhenItsGraceEnds(t *testing.T) {
	t.Parallel()
	h := newHooked(t)
	hook := h.hook(t, webhooks.CreateRequest{Name: "forget/x", Every: 1})
	ctx := context.Background()
	until := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)
	rotated, err := h.hooks.RotateSecret(ctx, hook.ID, "whsec_Zm9yZ2V0Zm9yZ2V0Zm9yZ2V0Zm9yZ2V0Zm9y", until)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		at        time.Time
		forgotten int64
		want      webhooks.Secrets
	}{
		{until.Add(-time.Microsecond), 0, webhooks.Secrets{Current: rotated.Secret, Previous: hook.Secret, PreviousUntil: until}},
		{until, 1, webhooks.Secrets{Current: rotated.Secret}},
	} {
		if n, err := h.hooks.ForgetPreviousSecrets(ctx, step.at); err != nil || n != step.forgotten {
			t.Fatalf("at %v: forgot %d, %v; want %d", step.at, n, err, step.forgotten)
		}
		if _, err := h.store.Increment(ctx, "forget/x", 1); err != nil {
			t.Fatal(err)
		}
		as, err := h.hooks.Claim(ctx, 1, time.Minute)
		if err != nil || len(as) != 1 {
			t.Fatalf("claim: %v %v", as, err)
		}
		if got := as[0].Secrets; got.Current != step.want.Current || got.Previous != step.want.Previous || !got.PreviousUntil.Equal(step.want.PreviousUntil) {
			t.Fatalf("at %v the claim reads %+v, want %+v", step.at, got, step.want)
		}
	}
}
