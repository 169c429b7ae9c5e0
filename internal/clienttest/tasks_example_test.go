package clienttest

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/countersvc/countersvc/client"
)

// The three tasks of docs/client.md ("Three tasks in Go"), as they are
// written there, run against the service. The Python client's are in
// clients/python/README.md and its tests.

func Example_taskSale() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // retries included
	defer cancel()
	orderID := "order-1042" // kept with the order: a retry after a restart counts once too
	v, err := c.Increment(ctx, "tasks/shop/books/Red Horse Hill", 2,
		client.Labels(map[string]string{"channel": "web"}), client.IdempotencyKey("sale-"+orderID))
	if err != nil {
		log.Fatal(err) // *client.Error with Code, Status, Message, RequestID; or the network's error
	}
	fmt.Println("sold, total:", v)
	v, _ = c.Increment(ctx, "tasks/shop/books/Red Horse Hill", 2,
		client.Labels(map[string]string{"channel": "web"}), client.IdempotencyKey("sale-"+orderID))
	fmt.Println("the same order again:", v)
	// Output:
	// sold, total: 2
	// the same order again: 2
}

func Example_taskBadge() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Serving /blog/hello: count the visit and show the count, as the
	// snippet would in the browser.
	hits, err := c.Hit(ctx, "hits/tasks/blog/hello")
	if err != nil {
		hits = -1 // rate_limited or unavailable: render the page without the count
	}
	fmt.Printf("<span class=\"badge\">hits: %d</span>\n", hits)
	// Output: <span class="badge">hits: 1</span>
}

func Example_taskDashboard() {
	c, _ := client.New(serviceURL, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a dashboard: until it closes
	defer cancel()
	c.Set(ctx, "tasks/sales/total", 41, client.SetOptions{})
	for ev, err := range c.Watch(ctx, "tasks/sales/total") {
		if err != nil {
			log.Print(err) // NotFound, or the context ended
			break
		}
		fmt.Println("sales:", ev.Value) // push it to the page
		if ev.Value == 42 {
			break
		}
		c.Increment(ctx, "tasks/sales/total", 1) // a sale elsewhere
	}
	// Output:
	// sales: 41
	// sales: 42
}
