package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/countersvc/countersvc/client"
)

func Example_new() {
	// Where the service has COUNTERS_API_TOKEN, Options.Token is that token
	// or an API key's secret; this service answers its own machine without.
	c, err := client.New(serviceURL, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Increment(ctx, "examples/new", 1)
	fmt.Println(v, err)
	// Output: 1 <nil>
}

func Example_increment() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	// A sale of 2 copies: if the answer is lost on the way back, the retry
	// carries the same Idempotency-Key and the sale counts once.
	v, err := c.Increment(ctx, "examples/books/Red Horse Hill", 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sold:", v)
	v, _ = c.Increment(ctx, "examples/books/Red Horse Hill", -1) // a refund
	fmt.Println("after the refund:", v)
	// Output:
	// sold: 2
	// after the refund: 1
}

func Example_idempotencyKey() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	// The key kept with the order makes the sale count once even when the
	// whole program retries it after a restart.
	first, _ := c.Increment(ctx, "examples/revenue/cents", 2598, client.IdempotencyKey("order-1042"))
	again, _ := c.Increment(ctx, "examples/revenue/cents", 2598, client.IdempotencyKey("order-1042"))
	fmt.Println(first, again)
	// Output: 2598 2598
}

func Example_get() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	c.Increment(ctx, "examples/get", 41)
	ctr, err := c.Get(ctx, "examples/get")
	fmt.Println(ctr.Name, ctr.Value, err)
	_, err = c.Get(ctx, "examples/never")
	fmt.Println(errors.Is(err, client.NotFound))
	// Output:
	// examples/get 41 <nil>
	// true
}

func Example_set() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	// A stock level that must never go below 0.
	ctr, created, _ := c.Set(ctx, "examples/stock/bulldozer", 1, client.SetOptions{Min: client.Limit(0)})
	fmt.Println(ctr.Value, *ctr.Min, created)
	c.Increment(ctx, "examples/stock/bulldozer", -1)
	_, err := c.Increment(ctx, "examples/stock/bulldozer", -1)
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	// Output:
	// 1 0 true
	// 422 out_of_range
}

func Example_delete() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	c.Increment(ctx, "examples/delete", 1)
	fmt.Println(c.Delete(ctx, "examples/delete"))
	fmt.Println(errors.Is(c.Delete(ctx, "examples/delete"), client.NotFound))
	// Output:
	// <nil>
	// true
}

func Example_list() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	for _, name := range []string{"examples/list/a", "examples/list/b", "examples/list/c"} {
		c.Increment(ctx, name, 1)
	}
	// Two a page: the loop follows the pages to the last.
	for ctr, err := range c.List(ctx, client.ListOptions{Prefix: "examples/list/", PageSize: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ctr.Name, ctr.Value)
	}
	// Output:
	// examples/list/a 1
	// examples/list/b 1
	// examples/list/c 1
}

func Example_batch() {
	c, _ := client.New(serviceURL, client.Options{})
	values, err := c.Batch(context.Background(), []client.Step{
		{Name: "examples/batch/copies", By: 2},
		{Name: "examples/batch/cents", By: 2598},
	})
	fmt.Println(values, err)
	// Output: [{examples/batch/copies 2} {examples/batch/cents 2598}] <nil>
}

func Example_reset() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	c.Increment(ctx, "examples/buyers/november", 7)
	n, _ := c.Reset(ctx, "examples/buyers/", 0)
	ctr, _ := c.Get(ctx, "examples/buyers/november")
	fmt.Println(n, ctr.Value)
	// Output: 1 0
}

func Example_history() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	c.Increment(ctx, "examples/history", 3)
	c.Increment(ctx, "examples/history", 4)
	h, err := c.History(ctx, "examples/history", client.HistoryOptions{Step: client.StepDay, TZ: "Europe/Berlin"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(h.Points), "days, counting", h.Total)
	// Output: 30 days, counting 7
}

func Example_export() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	c.Increment(ctx, "examples/export/a", 1)
	c.Increment(ctx, "examples/export/b", 2)
	var lines strings.Builder
	n, err := c.Export(ctx, "examples/export/", &lines)
	fmt.Println(n, err)
	fmt.Println(strings.Count(lines.String(), "\n"), strings.HasPrefix(lines.String(), `{"name":"examples/export/a","value":1,`))
	// Output:
	// 2 <nil>
	// 2 true
}

func Example_import() {
	c, _ := client.New(serviceURL, client.Options{})
	lines := `{"name": "examples/moved/blog", "value": 1532, "created_at": "2019-04-01T00:00:00Z"}
{"name": "examples/moved/faq", "value": "lots"}
`
	rep, err := c.Import(context.Background(), strings.NewReader(lines), client.ImportOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created", rep.Created, "refused", rep.Refused)
	for _, l := range rep.Lines {
		fmt.Println(l.Line, l.Outcome, l.Reason)
	}
	// Output:
	// created 1 refused 1
	// 2 refused malformed
}

func Example_createKey() {
	admin, _ := client.New(serviceURL, client.Options{}) // the admin token, where the service has one
	ctx := context.Background()
	k, err := admin.CreateKey(ctx, client.KeyRequest{Name: "shop A", Scopes: []string{"read", "write"}, Prefixes: []string{"examples/shopA/"}})
	if err != nil {
		log.Fatal(err)
	}
	// The secret is in this answer only: hand it to the shop now.
	shop, _ := client.New(serviceURL, client.Options{Token: k.Secret})
	v, _ := shop.Increment(ctx, "examples/shopA/sales", 1)
	_, err = shop.Increment(ctx, "examples/shopB/sales", 1)
	fmt.Println(strings.HasPrefix(k.Secret, "ck_"), v, errors.Is(err, client.PermissionDenied))
	admin.DeleteKey(ctx, k.ID)
	// Output: true 1 true
}

func Example_createTicket() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	board, err := c.CreateBoard(ctx, 42, "rock", "Rock Board")
	if err != nil {
		log.Fatal(err)
	}
	for _, title := range []string{"Amp hums", "Drum skin torn"} {
		t, _ := c.CreateTicket(ctx, board.ID, title, "")
		fmt.Println(t.Key, t.Title)
	}
	// Output:
	// ROCK-1 Amp hums
	// ROCK-2 Drum skin torn
}

func Example_watch() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Set(ctx, "examples/watch/index.html", 1532, client.SetOptions{})
	// The current value at once, then each new one.
	for ev, err := range c.Watch(ctx, "examples/watch/index.html") {
		if err != nil {
			log.Print(err) // NotFound, or the context ended
			break
		}
		fmt.Println(ev.Type, ev.Value)
		if ev.Value == 1533 {
			break
		}
		c.Increment(ctx, "examples/watch/index.html", 1) // a visitor elsewhere
	}
	// Output:
	// counter 1532
	// counter 1533
}

func Example_createWebhook() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx := context.Background()
	// Addresses of this machine or a private network are refused unless
	// the service has COUNTERS_WEBHOOK_ALLOW_PRIVATE=true.
	hook, err := c.CreateWebhook(ctx, client.WebhookRequest{
		URL:        "https://93.184.215.14/restock",
		Name:       "examples/stock/widget",
		Thresholds: []int64{0},
		Direction:  "down",
	})
	if err != nil {
		log.Fatal(err)
	}
	// Keep the secret to check the calls' signatures: it is shown only here.
	fmt.Println(strings.HasPrefix(hook.Secret, "whsec_"))
	again, _ := c.Webhook(ctx, hook.ID)
	fmt.Println(again.Name, again.Direction, again.Thresholds, again.Secret == "")
	fmt.Println(c.DeleteWebhook(ctx, hook.ID))
	// Output:
	// true
	// examples/stock/widget down [0] true
	// <nil>
}
