package clustertest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/config"
)

// oneEventPerCrossing runs three services, the ith on dsn(i, ...), each
// with the relay every process runs, and increments one counter through
// all three at once past thresholds 100 and 200: each crossing is recorded
// once in the transaction that made it, on whichever node committed it,
// and delivered once, though three relays claim from three nodes (on
// Galera a double claim is a certification failure at commit, which the
// relay takes as not claimed).
func oneEventPerCrossing(t *testing.T, dsn func(i int, name string) string) {
	var mu sync.Mutex
	calls := map[string]int{} // webhook-id -> calls
	thresholds := map[float64]int{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e struct{ Data struct{ Threshold float64 } }
		json.Unmarshal(body, &e)
		mu.Lock()
		if calls[r.Header.Get("webhook-id")]++; calls[r.Header.Get("webhook-id")] == 1 {
			thresholds[e.Data.Threshold]++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	procs := threeServices(t, dsn, "", func(c *config.Config) { c.Webhooks.AllowPrivate = true })
	if r := procs[0].Do(t, "POST", "/v1/webhooks", `{"url": "`+receiver.URL+`", "name": "stock", "thresholds": [100, 200]}`); r.Status != 201 {
		t.Fatalf("creating the hook: %d %s", r.Status, r.Body)
	}
	// Without Redis the other processes read the hooks again every second.
	time.Sleep(2 * time.Second)

	const each = 90 // 270 increments through three nodes
	var failed atomic.Int64
	var wg sync.WaitGroup
	for _, p := range procs {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each / 3 {
					if r, err := p.TryDo("POST", "/v1/counters/stock/increment", ""); err != nil || r.Status != 200 {
						failed.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d increments failed", failed.Load())
	}
	if got := procs[1].Stored(t, "stock"); got != 3*each {
		t.Fatalf("stock = %d, want %d", got, 3*each)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got100, got200, ids := thresholds[100], thresholds[200], len(calls)
		mu.Unlock()
		if got100 == 1 && got200 == 1 && ids == 2 {
			break
		}
		if time.Now().After(deadline) || got100 > 1 || got200 > 1 || ids > 2 {
			t.Fatalf("events: threshold 100 %d times, 200 %d times, %d ids; want one each", got100, got200, ids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a second delivery of either would show by now
	mu.Lock()
	defer mu.Unlock()
	for id, n := range calls {
		if n != 1 {
			t.Errorf("event %s delivered %d times; three relays claimed it at once", id, n)
		}
	}
}
