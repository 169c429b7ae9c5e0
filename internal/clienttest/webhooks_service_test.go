package clienttest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersvc/countersvc/client"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// receiver is a webhook endpoint on this machine: it records each call and
// answers status (204 until changed).
type receiver struct {
	*httptest.Server
	status atomic.Int64
	mu     sync.Mutex
	calls  []http.Header
	bodies [][]byte
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.status.Store(http.StatusNoContent)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.calls = append(rc.calls, r.Header.Clone())
		rc.bodies = append(rc.bodies, body)
		rc.mu.Unlock()
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// waitCalls waits until the receiver has had n calls and returns the nth.
func (rc *receiver) waitCalls(t *testing.T, n int) (http.Header, []byte) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rc.mu.Lock()
		if len(rc.calls) >= n {
			defer rc.mu.Unlock()
			return rc.calls[n-1], rc.bodies[n-1]
		}
		rc.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got fewer than %d calls in 20s", n)
		}
	}
}

// eventually retries check every 50ms for up to 20s until it returns "".
func eventually(t *testing.T, check func() string) {
	t.Helper()
	var why string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if why = check(); why == "" {
			return
		}
	}
	t.Fatal(why)
}

// newWebhookService is the service with Redis, allowed to call this
// machine's receivers.
func newWebhookService(t *testing.T) *apptest.Env {
	return apptest.NewWithCache(t, testenv.StartRedis(t).URL(), func(c *wire.Config) { c.Webhooks.AllowPrivate = true })
}

// A webhook made through the client shows its secret once, lists and
// reads back without it, is called, signed with that secret, when its
// counter crosses the threshold, shows the call in its deliveries, is
// disabled by a 410 and enabled again, and is deleted.
func TestAWebhookMadeThroughTheClientIsCalledAndListsItsDeliveries(t *testing.T) {
	t.Parallel()
	env := newWebhookService(t)
	rc := newReceiver(t)
	c, ctx := newClient(t, env.URL, client.Options{})
	c.Set(ctx, "stock/widget", 1, client.SetOptions{})

	hook, err := c.CreateWebhook(ctx, client.WebhookRequest{URL: rc.URL + "/restock", Name: "stock/widget", Thresholds: []int64{0}, Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if hook.ID == "" || !strings.HasPrefix(hook.Secret, "whsec_") || hook.Name != "stock/widget" || hook.Direction != "down" ||
		len(hook.Thresholds) != 1 || hook.Thresholds[0] != 0 || hook.DisabledAt != nil || hook.CreatedAt.IsZero() {
		t.Fatalf("created %+v", hook)
	}
	list, err := c.Webhooks(ctx)
	if err != nil || len(list) != 1 || list[0].ID != hook.ID || list[0].URL != hook.URL || list[0].Secret != "" {
		t.Fatalf("Webhooks: %+v, %v; want the one hook without its secret", list, err)
	}
	got, err := c.Webhook(ctx, hook.ID)
	if err != nil || got.Secret != "" || got.Name != "stock/widget" || got.URL != hook.URL {
		t.Fatalf("Webhook: %+v, %v; want the hook without its secret", got, err)
	}

	if v, err := c.Increment(ctx, "stock/widget", -1); err != nil || v != 0 {
		t.Fatalf("Increment: %d, %v", v, err)
	}
	header, body := rc.waitCalls(t, 1)
	wh, err := standardwebhooks.NewWebhook(hook.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, header); err != nil {
		t.Errorf("the call is not signed with the secret CreateWebhook returned: %v", err)
	}
	var call struct {
		Type string
		Data struct {
			Name, Direction            string
			Threshold, Previous, Value int64
		}
	}
	if err := json.Unmarshal(body, &call); err != nil || call.Type != "counter.threshold" ||
		call.Data.Name != "stock/widget" || call.Data.Direction != "down" || call.Data.Previous != 1 || call.Data.Value != 0 {
		t.Errorf("call %s (%v)", body, err)
	}
	eventually(t, func() string {
		ds, err := c.Deliveries(ctx, hook.ID, 10)
		if err != nil || len(ds) != 1 || ds[0].Status != "delivered" {
			return "deliveries: " + jsonOf(ds) + " " + errString(err) + "; want one delivered"
		}
		d := ds[0]
		if d.ID == "" || d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 204 || d.NextAttemptAt != nil || d.CreatedAt.IsZero() || string(d.Event) != string(body) {
			t.Errorf("delivery %s, want 1 attempt answered 204 with the body sent %s", jsonOf(d), body)
		}
		return ""
	})

	// A 410 disables the hook; EnableWebhook makes it deliver again.
	rc.status.Store(http.StatusGone)
	c.Increment(ctx, "stock/widget", 1)
	c.Increment(ctx, "stock/widget", -1)
	rc.waitCalls(t, 2)
	eventually(t, func() string {
		h, err := c.Webhook(ctx, hook.ID)
		if err != nil || h.DisabledAt == nil {
			return "the hook answered 410 is not disabled: " + jsonOf(h) + " " + errString(err)
		}
		return ""
	})
	if err := c.EnableWebhook(ctx, hook.ID); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Webhook(ctx, hook.ID); err != nil || h.DisabledAt != nil {
		t.Errorf("after EnableWebhook: %s, %v; want it enabled", jsonOf(h), err)
	}
	if ds, err := c.Deliveries(ctx, hook.ID, 1); err != nil || len(ds) != 1 {
		t.Errorf("Deliveries with limit 1: %s, %v", jsonOf(ds), err)
	}

	if err := c.DeleteWebhook(ctx, hook.ID); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		func() error { _, err := c.Webhook(ctx, hook.ID); return err }(),
		func() error { _, err := c.Deliveries(ctx, hook.ID, 0); return err }(),
		c.EnableWebhook(ctx, hook.ID),
	} {
		if !errors.Is(err, client.NotFound) {
			t.Errorf("after the delete: %v, want NotFound", err)
		}
	}
}

// RotateWebhookSecret returns a new secret, never the old one; the calls
// that follow verify with either until the grace ends; a missing hook is
// NotFound.
func TestARotatedWebhookSecretVerifiesBesideTheOldOne(t *testing.T) {
	t.Parallel()
	env := newWebhookService(t)
	rc := newReceiver(t)
	c, ctx := newClient(t, env.URL, client.Options{})
	hook, err := c.CreateWebhook(ctx, client.WebhookRequest{URL: rc.URL, Name: "stock/gadget", Every: 1})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := c.RotateWebhookSecret(ctx, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.ID != hook.ID || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == hook.Secret || rotated.PreviousSecretExpiresAt == nil ||
		time.Until(*rotated.PreviousSecretExpiresAt) < 23*time.Hour || time.Until(*rotated.PreviousSecretExpiresAt) > 25*time.Hour {
		t.Fatalf("rotated %s, want a new secret and the old one's end a day from now", jsonOf(rotated))
	}
	if got, err := c.Webhook(ctx, hook.ID); err != nil || got.Secret != "" || got.PreviousSecretExpiresAt != nil {
		t.Fatalf("Webhook after the rotation: %s, %v; want no secret", jsonOf(got), err)
	}
	if _, err := c.Increment(ctx, "stock/gadget", 1); err != nil {
		t.Fatal(err)
	}
	header, body := rc.waitCalls(t, 1)
	for _, secret := range []string{rotated.Secret, hook.Secret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, header); err != nil {
			t.Errorf("the call after the rotation does not verify with %s: %v", map[bool]string{true: "the new secret", false: "the old one"}[secret == rotated.Secret], err)
		}
	}
	if _, err := c.RotateWebhookSecret(ctx, "999999"); !errors.Is(err, client.NotFound) {
		t.Errorf("rotating a missing hook: %v, want NotFound", err)
	}
}

// A webhook URL the service refuses is an InvalidArgument error.
func TestAWebhookURLOfThisMachineIsRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	_, err := c.CreateWebhook(ctx, client.WebhookRequest{URL: "http://127.0.0.1:9/hook", Name: "stock/widget", Thresholds: []int64{0}})
	if !errors.Is(err, client.InvalidArgument) {
		t.Errorf("error %v, want InvalidArgument", err)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// The client makes alerts, and reads them back with their window and
// their above or below; the service's refusal of a bad one is a typed
// error.
func TestAnAlertMadeThroughTheClientListsItsWindow(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, func(c *wire.Config) { c.Webhooks.AllowPrivate = true })
	c, ctx := newClient(t, env.URL, client.Options{})
	silence, err := c.CreateWebhook(ctx, client.AlertBelow("http://127.0.0.1:9/", "", "shop/", "6h", 1))
	if err != nil {
		t.Fatal(err)
	}
	rate, err := c.CreateWebhook(ctx, client.AlertAbove("http://127.0.0.1:9/", "shop/book", "", "90m", 50))
	if err != nil {
		t.Fatal(err)
	}
	if silence.Window != "6h" || silence.Below == nil || *silence.Below != 1 || silence.Above != nil || silence.Prefix != "shop/" || silence.Secret == "" {
		t.Fatalf("silence: %+v", silence)
	}
	got, err := c.Webhook(ctx, rate.ID)
	if err != nil || got.Window != "1h30m" || got.Above == nil || *got.Above != 50 || got.Below != nil || got.Name != "shop/book" ||
		got.Direction != "" || got.Thresholds != nil {
		t.Fatalf("rate: %+v, %v", got, err)
	}
	_, err = c.CreateWebhook(ctx, client.AlertAbove("http://127.0.0.1:9/", "shop/book", "", "2m", 50))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "invalid_argument" {
		t.Fatalf("a 2m window: %v, want invalid_argument", err)
	}
}
