package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// streamEndsWithin fails unless s ends within d of since.
func streamEndsWithin(t *testing.T, what string, s *apptest.Stream, since time.Time, d time.Duration) {
	t.Helper()
	select {
	case <-s.Done:
		t.Logf("%s: ended %v after the revocation", what, time.Since(since))
	case <-time.After(time.Until(since.Add(d))):
		t.Errorf("%s: still open %v after the revocation", what, time.Since(since))
	}
}

// A stream opened with a key ends once the key is revoked, on the process
// that revoked it and on every other one, within the bound of the
// refusal of its requests (openapi.yaml: every process of the service
// refuses it "within 1 second"): a revoked key reads nothing more. The
// admin's streams stay.
func TestStreamsOfARevokedKeyEndWithinASecond(t *testing.T) {
	a := apptest.New(t, liveOptions)
	b := apptest.NewWithDSN(t, a.DSN, liveOptions)
	k := createKey(t, a, `{"name": "live reader", "scopes": ["read"], "prefixes": ["live/"]}`)
	a.Do(t, "PUT", "/v1/counters/live%2Frev", `{"value": 1}`)
	type open struct {
		what string
		s    *apptest.Stream
	}
	var keyed []open
	for _, e := range []struct {
		process string
		env     *apptest.Env
	}{{"revoking process", a}, {"other process", b}} {
		for _, path := range []string{"/v1/counters/live%2Frev/events", "/v1/events?prefix=live%2F"} {
			keyed = append(keyed, open{e.process + " " + path, apptest.OpenStream(t, e.env.URL+path, bearerOf(k.Secret))})
		}
	}
	admin := apptest.OpenStream(t, b.URL+"/v1/events?prefix=live%2F")
	time.Sleep(300 * time.Millisecond) // the key is believed afresh on both processes

	if r := a.Do(t, "DELETE", fmt.Sprintf("/v1/keys/%d", k.ID), ""); r.Status != 204 {
		t.Fatalf("DELETE /v1/keys/%d: %d %s", k.ID, r.Status, r.Body)
	}
	revoked := time.Now()
	for _, o := range keyed {
		streamEndsWithin(t, o.what, o.s, revoked, 1500*time.Millisecond)
	}
	increment(t, a, "live%2Frev")
	if ev := admin.Next(t, 2*time.Second); ev.Name != "live/rev" || ev.Value != 2 {
		t.Errorf("the admin's stream after the revocation: %+v, want live/rev = 2", ev)
	}
}

// A stream opened with a key that expires later ends when it expires,
// within the bound of the refusal, and not before.
func TestStreamsOfAKeyEndWhenItExpires(t *testing.T) {
	e := apptest.New(t, liveOptions)
	expires := time.Now().Add(2 * time.Second).UTC()
	k := createKey(t, e, fmt.Sprintf(`{"name": "short", "scopes": ["read"], "prefixes": ["live/"], "expires_at": %q}`, expires.Format(time.RFC3339Nano)))
	e.Do(t, "PUT", "/v1/counters/live%2Fexp", `{"value": 1}`)
	streams := []*apptest.Stream{
		apptest.OpenStream(t, e.URL+"/v1/counters/live%2Fexp/events", bearerOf(k.Secret)),
		apptest.OpenStream(t, e.URL+"/v1/events?prefix=live%2F", bearerOf(k.Secret)),
	}
	for i, s := range streams {
		select {
		case <-s.Done:
			t.Fatalf("stream %d ended %v before the key expired", i, time.Until(expires))
		case <-time.After(time.Until(expires) - 200*time.Millisecond):
		}
	}
	for i, s := range streams {
		select {
		case <-s.Done:
		case <-time.After(time.Until(expires) + 1500*time.Millisecond):
			t.Errorf("stream %d still open %v after the key expired", i, time.Since(expires))
		}
	}
}
