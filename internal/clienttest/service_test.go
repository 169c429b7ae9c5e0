package clienttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/client"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// newClient is a client of url that fails the test rather than hang.
// (client/retry_test.go has its twin: the client's module cannot share
// test code with the service's.)
func newClient(t *testing.T, url string, opts client.Options) (*client.Client, context.Context) {
	t.Helper()
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

// A write whose answer a proxy drops after the service committed it is
// retried with the same Idempotency-Key: the call answers what the write
// produced, and the counters moved exactly once.
func TestAWriteWhoseAnswerWasLostIsRetriedAndCountsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, c *client.Client) (int64, error)
		// want is the value the write answers, and the counter's after it.
		want int64
	}{
		{"increment", func(ctx context.Context, c *client.Client) (int64, error) {
			return c.Increment(ctx, "lost/increment", 5)
		}, 5},
		{"batch", func(ctx context.Context, c *client.Client) (int64, error) {
			vs, err := c.Batch(ctx, []client.Step{{Name: "lost/other", By: 1}, {Name: "lost/batch", By: 7}})
			if err != nil {
				return 0, err
			}
			return vs[1].Value, nil
		}, 7},
		{"set", func(ctx context.Context, c *client.Client) (int64, error) {
			ctr, created, err := c.Set(ctx, "lost/set", 3, client.SetOptions{CreateOnly: true})
			if err == nil && !created {
				err = errors.New("the replayed answer lost its 201")
			}
			return ctr.Value, err
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := shared.NewDropProxy(t, 1)
			c, ctx := newClient(t, proxy.URL, client.Options{})
			got, err := tc.write(ctx, c)
			if err != nil {
				t.Fatalf("the retried write failed: %v", err)
			}
			if got != tc.want {
				t.Errorf("answered %d, want %d", got, tc.want)
			}
			keys := proxy.Keys()
			if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
				t.Fatalf("Idempotency-Keys sent: %q, want one key sent twice", keys)
			}
			ctr, err := c.Get(ctx, "lost/"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if ctr.Value != tc.want {
				t.Errorf("the counter is %d after the write and its retry, want %d: it moved twice", ctr.Value, tc.want)
			}
		})
	}
}

// Every error code of the API, answered by the real service, is an
// *client.Error with that code, which errors.Is finds by the Code.
func TestEveryErrorCodeOfTheServiceIsItsTypedError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, _ := newClient(t, shared.URL, client.Options{})
	guarded := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "the-admin-token" })
	noToken, _ := newClient(t, guarded.URL, client.Options{})
	limited := apptest.NewWithCache(t, testenv.StartRedis(t).URL(), func(c *wire.Config) {
		c.Hits.Limits.Rate, c.Hits.Limits.DedupWindow = 1, 0
		// A limit check that timed out on a loaded machine would let the
		// second hit through (fail open).
		c.Cache.Timeout = 5 * time.Second
	})
	hits, _ := newClient(t, limited.URL, client.Options{})
	db := testenv.StartMariaDB(t)
	down := apptest.NewWithDSN(t, testenv.NewDatabase(t, db.ServerDSN()))
	outage, _ := newClient(t, down.URL, client.Options{Retries: -1})

	for _, tc := range []struct {
		code   client.Code
		status int
		call   func() error
	}{
		{client.InvalidArgument, 400, func() error { _, err := plain.Increment(ctx, "bad\x01name", 1); return err }},
		{client.Unauthenticated, 401, func() error { _, err := noToken.Get(ctx, "x"); return err }},
		{client.PermissionDenied, 403, func() error { _, err := plain.Increment(ctx, "_reserved", 1); return err }},
		{client.NotFound, 404, func() error { _, err := plain.Get(ctx, "errors/missing"); return err }},
		{client.Conflict, 409, func() error {
			if _, _, err := plain.Set(ctx, "errors/exists", 1, client.SetOptions{}); err != nil {
				return err
			}
			_, _, err := plain.Set(ctx, "errors/exists", 1, client.SetOptions{CreateOnly: true})
			return err
		}},
		{client.PayloadTooLarge, 413, func() error {
			_, err := plain.CreateTicket(ctx, 1, "big", strings.Repeat("x", 100_000))
			return err
		}},
		{client.OutOfRange, 422, func() error {
			if _, _, err := plain.Set(ctx, "errors/max", 1<<63-1, client.SetOptions{}); err != nil {
				return err
			}
			_, err := plain.Increment(ctx, "errors/max", 1)
			return err
		}},
		{client.RateLimited, 429, func() error {
			if _, err := hits.Hit(ctx, "hits/errors"); err != nil {
				return err
			}
			// The window's Retry-After is past this deadline: no retry.
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := hits.Hit(short, "hits/errors")
			return err
		}},
		{client.Unavailable, 503, func() error {
			db.Kill()
			_, err := outage.Increment(ctx, "errors/down", 1)
			return err
		}},
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			err := tc.call()
			var ae *client.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T), want a *client.Error", err, err)
			}
			if ae.Code != tc.code || ae.Status != tc.status || ae.Message == "" {
				t.Errorf("got %d %s %q, want %d %s with a message", ae.Status, ae.Code, ae.Message, tc.status, tc.code)
			}
			if !errors.Is(err, tc.code) {
				t.Errorf("errors.Is(err, %s) is false", tc.code)
			}
			if errors.Is(err, client.Internal) {
				t.Errorf("errors.Is(err, Internal) is true for %s", tc.code)
			}
		})
	}
}

// A list follows the pages to the last: every counter under the prefix,
// in name order, and none outside it.
func TestListFollowsEveryPage(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("list/%02d", i)
		want = append(want, name)
		if _, err := c.Increment(ctx, name, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Increment(ctx, "listx", 1); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ctr, err := range c.List(ctx, client.ListOptions{Prefix: "list/", PageSize: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ctr.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	n := 0
	for range c.List(ctx, client.ListOptions{Prefix: "list/", PageSize: 3}) {
		if n++; n == 4 {
			break // breaking out stops the iterator without a panic
		}
	}
}

// What Export writes, Import takes back; a stream of another service
// would create the counters, and on this one they exist and are skipped.
func TestExportWritesWhatImportReads(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	if _, _, err := c.Set(ctx, "moved/a", 10, client.SetOptions{Min: client.Limit(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(ctx, "moved/b", 2); err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	n, err := c.Export(ctx, "moved/", &lines)
	if err != nil || n != 2 {
		t.Fatalf("Export = %d, %v; want 2 lines", n, err)
	}
	rep, err := c.Import(ctx, bytes.NewReader(lines.Bytes()), client.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Read != 2 || rep.Skipped != 2 || rep.Created != 0 {
		t.Errorf("importing the export into its own service: %+v, want 2 read and skipped", rep)
	}
	fresh := apptest.New(t)
	into, _ := newClient(t, fresh.URL, client.Options{})
	rep, err = into.Import(ctx, strings.NewReader(lines.String()), client.ImportOptions{Overwrite: true, Atomic: true})
	if err != nil || rep.Created != 2 || !rep.Applied {
		t.Fatalf("importing into a fresh service: %+v, %v", rep, err)
	}
	ctr, err := into.Get(ctx, "moved/a")
	if err != nil || ctr.Value != 10 || ctr.Min == nil || *ctr.Min != 0 {
		t.Errorf("moved/a after the move: %+v, %v; want 10 with min 0", ctr, err)
	}
	_, err = into.Import(ctx, strings.NewReader(`{"name":"moved/c","value":"lots"}`+"\n"), client.ImportOptions{Atomic: true})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != client.InvalidArgument || ae.Report == nil || ae.Report.Refused != 1 {
		t.Errorf("an atomic import with a bad line: %v, want invalid_argument with a report of 1 refused", err)
	}
}

// History counts the increments per period in the zone asked for.
func TestHistoryCountsIncrementsOfToday(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	for _, by := range []int64{2, 3} {
		if _, err := c.Increment(ctx, "history/a", by); err != nil {
			t.Fatal(err)
		}
	}
	h, err := c.History(ctx, "history/a", client.HistoryOptions{Step: client.StepDay, TZ: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range h.Points {
		sum += p.Count
	}
	// Today, or yesterday and today for a run across midnight in Berlin.
	if h.Total != 5 || sum != 5 || len(h.Points) != 30 || h.TZ != "Europe/Berlin" {
		t.Errorf("history %+v, want 30 days counting 5", h)
	}
	p, err := c.PrefixHistory(ctx, "history/", client.HistoryOptions{Step: client.StepMonth})
	if err != nil || p.Total != 5 || p.Prefix != "history/" {
		t.Errorf("prefix history %+v, %v", p, err)
	}
	if _, err := c.History(ctx, "history/a", client.HistoryOptions{TZ: "Mars/Olympus"}); !errors.Is(err, client.InvalidArgument) {
		t.Errorf("an unknown zone: %v, want invalid_argument", err)
	}
	// From and To are times: local midnights in the zone give its days.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 28, 0, 0, 0, 0, berlin) // across the switch to summer time
	r, err := c.History(ctx, "history/a", client.HistoryOptions{Step: client.StepDay, From: from, To: from.AddDate(0, 0, 3), TZ: "Europe/Berlin"})
	if err != nil || len(r.Points) != 3 || !r.From.Equal(from) || !r.Points[2].Start.Equal(from.AddDate(0, 0, 2)) || r.Step != client.StepDay {
		t.Errorf("three Berlin days from %v: %+v, %v", from, r, err)
	}
}

// Labels ride on increments, batch items and keyed retries, and come back
// as a breakdown that adds up to the history.
func TestLabelledIncrementsComeBackAsABreakdown(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	web := client.Labels(map[string]string{"channel": "web", "region": "EU"})
	if _, err := c.Increment(ctx, "shopbd/a", 3, web); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a retry with the same key counts once
		if _, err := c.Increment(ctx, "shopbd/a", 2, web, client.IdempotencyKey("sale-1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Batch(ctx, []client.Step{{Name: "shopbd/a", By: 4, Labels: map[string]string{"channel": "shop"}}, {Name: "shopbd/b", By: 1}}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Breakdown(ctx, "shopbd/a", "channel", client.BreakdownOptions{})
	want := []client.BreakdownRow{{Value: "web", Count: 5}, {Value: "shop", Count: 4}}
	if err != nil || b.Total != 9 || b.More != 0 || fmt.Sprint(b.Rows) != fmt.Sprint(want) || b.By != "channel" {
		t.Errorf("Breakdown = %+v, %v; want rows %v of 9", b, err, want)
	}
	p, err := c.PrefixBreakdown(ctx, "shopbd/", client.ByName, client.BreakdownOptions{Limit: 1, TZ: "Europe/Berlin"})
	if err != nil || p.Total != 10 || p.More != 1 || len(p.Rows) != 1 || p.Rows[0] != (client.BreakdownRow{Value: "shopbd/a", Count: 9}) {
		t.Errorf("PrefixBreakdown by name = %+v, %v", p, err)
	}
	if _, err := c.Increment(ctx, "shopbd/a", 1, client.Labels(map[string]string{"Channel": "web"})); !errors.Is(err, client.InvalidArgument) {
		t.Errorf("a bad label: %v, want invalid_argument", err)
	}
	if _, err := c.Breakdown(ctx, "shopbd/none", "channel", client.BreakdownOptions{}); !errors.Is(err, client.NotFound) {
		t.Errorf("a missing counter: %v, want not_found", err)
	}
}

// A key made by the admin works within its prefixes and nowhere else, and
// stops working once deleted.
func TestKeysLimitWhatTheirHolderTouches(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "admin-token" })
	admin, ctx := newClient(t, svc.URL, client.Options{Token: "admin-token"})
	k, err := admin.CreateKey(ctx, client.KeyRequest{Name: "shop A", Scopes: []string{"read", "write"}, Prefixes: []string{"shopA/"}})
	if err != nil || !strings.HasPrefix(k.Secret, "ck_") {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	shop, _ := newClient(t, svc.URL, client.Options{Token: k.Secret})
	if _, err := shop.Increment(ctx, "shopA/sales", 1); err != nil {
		t.Errorf("inside its prefix: %v", err)
	}
	if _, err := shop.Increment(ctx, "shopB/sales", 1); !errors.Is(err, client.PermissionDenied) {
		t.Errorf("outside its prefix: %v, want permission_denied", err)
	}
	keys, err := admin.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].Secret != "" || keys[0].Name != "shop A" {
		t.Errorf("Keys = %+v, %v; want the one key without its secret", keys, err)
	}
	if got, err := admin.Key(ctx, k.ID); err != nil || got.ID != k.ID {
		t.Errorf("Key(%d) = %+v, %v", k.ID, got, err)
	}
	if err := admin.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Get(ctx, "shopA/sales"); !errors.Is(err, client.Unauthenticated) {
		t.Errorf("a deleted key: %v, want unauthenticated", err)
	}
}

// Boards number their tickets; listing follows the pages.
func TestTicketsAreNumberedPerBoard(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t, shared.URL, client.Options{})
	b, err := c.CreateBoard(ctx, 1, "ninja", "Ninja Board")
	if err != nil || b.Slug != "NINJA" {
		t.Fatalf("CreateBoard = %+v, %v", b, err)
	}
	if _, err := c.CreateBoard(ctx, 1, "NINJA", "again"); !errors.Is(err, client.Conflict) {
		t.Errorf("a slug taken: %v, want conflict", err)
	}
	for i := 1; i <= 3; i++ {
		tk, err := c.CreateTicket(ctx, b.ID, fmt.Sprintf("ticket %d", i), "")
		if err != nil || tk.Key != fmt.Sprintf("NINJA-%d", i) {
			t.Fatalf("CreateTicket = %+v, %v", tk, err)
		}
	}
	if err := c.DeleteTicket(ctx, b.ID, 2); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for tk, err := range c.Tickets(ctx, b.ID) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tk.Key)
	}
	if want := []string{"NINJA-1", "NINJA-3"}; !slices.Equal(keys, want) {
		t.Errorf("tickets %q, want %q", keys, want)
	}
	if tk, err := c.TicketByKey(ctx, 1, "NINJA-3"); err != nil || tk.LocalID != 3 {
		t.Errorf("TicketByKey = %+v, %v", tk, err)
	}
	if _, err := c.Ticket(ctx, b.ID, 2); !errors.Is(err, client.NotFound) {
		t.Errorf("a deleted ticket: %v, want not_found", err)
	}
	if got, err := c.Board(ctx, b.ID); err != nil || got.Title != "Ninja Board" {
		t.Errorf("Board = %+v, %v", got, err)
	}
}
