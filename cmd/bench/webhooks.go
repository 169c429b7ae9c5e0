package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The webhooks scenario, on instances that may call this machine
// (scripts/bench sets COUNTERS_WEBHOOK_ALLOW_PRIVATE=true for all of them:
// they share the database, and any of their relays may deliver):
//   - what watching costs increments: the hot counter with 100 hooks that
//     never cross watching it (50 by its name, 50 by prefixes of it),
//     against a counter no hook watches, alternating on the same instance;
//   - how fast events are delivered to a receiver on this machine.
const (
	webhookWatched   = "bench/wh/hot"
	webhookUnwatched = "bench/nowh/hot"
	webhookHooks     = 100
	webhookDelivered = "bench/whd/x"
	webhookEvents    = 5000 // delivered, 100 per increment (a hook's most per change)
)

type webhooksResult struct {
	watched, unwatched load
	events, repeats    int
	elapsed            time.Duration
}

func (b *bench) webhooks() error {
	url := b.url
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := b.deleteHooks(ctx, url); err != nil { // an earlier run's
		return err
	}
	defer b.deleteHooks(context.Background(), url)
	for i := range webhookHooks {
		target := fmt.Sprintf(`"name": %q`, webhookWatched)
		if i%2 == 1 {
			target = fmt.Sprintf(`"prefix": %q`, webhookWatched[:len("bench/wh/")+i%3])
		}
		body := fmt.Sprintf(`{"url": "https://93.184.215.14/never", %s, "thresholds": [%d], "direction": "both"}`, target, int64(1)<<62+int64(i))
		if _, err := call(ctx, b.client, "POST", url+"/v1/webhooks", body, http.StatusCreated); err != nil {
			return fmt.Errorf("registering the hooks: %w", err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // every process reads the hooks within a second
	ms := []measure{
		b.wrk("hot counter, 100 hooks watching", url+"/v1/counters/"+pathEscape(webhookWatched)+"/increment", targetConns, postScript),
		b.wrk("hot counter, no hook watching", url+"/v1/counters/"+pathEscape(webhookUnwatched)+"/increment", targetConns, postScript),
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	r := &webhooksResult{watched: rs[0].byRPS(), unwatched: rs[1].byRPS()}
	if err := b.deliveries(ctx, url, r); err != nil {
		return err
	}
	b.r.webhooks = r
	return nil
}

// deliveries measures how long the instance takes to deliver
// webhookEvents events to a receiver of this process that answers 204.
func (b *bench) deliveries(ctx context.Context, url string, r *webhooksResult) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		mu.Lock()
		id := req.Header.Get("webhook-id")
		if seen[id] {
			r.repeats++
		}
		seen[id] = true
		if len(seen) == webhookEvents {
			close(all)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	body := fmt.Sprintf(`{"url": "http://%s/in", "name": %q, "every": 1}`, ln.Addr(), webhookDelivered)
	if _, err := call(ctx, b.client, "POST", url+"/v1/webhooks", body, http.StatusCreated); err != nil {
		return err
	}
	logf("delivering %d webhook events to a receiver on this machine", webhookEvents)
	start := time.Now()
	for range webhookEvents / 100 {
		if _, err := call(ctx, b.client, "POST", url+"/v1/counters/"+pathEscape(webhookDelivered)+"/increment", `{"by": 100}`, http.StatusOK); err != nil {
			return err
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		return fmt.Errorf("%d of %d webhook events delivered before the deadline", len(seen), webhookEvents)
	}
	r.elapsed = time.Since(start)
	r.events = webhookEvents
	return nil
}

// deleteHooks deletes every hook of the instance.
func (b *bench) deleteHooks(ctx context.Context, url string) error {
	body, err := call(ctx, b.client, "GET", url+"/v1/webhooks", "", http.StatusOK)
	if err != nil {
		return err
	}
	var list struct{ Webhooks []struct{ ID int64 } }
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}
	for _, h := range list.Webhooks {
		if _, err := call(ctx, b.client, "DELETE", fmt.Sprintf("%s/v1/webhooks/%d", url, h.ID), "", http.StatusNoContent); err != nil {
			return err
		}
	}
	return nil
}

func pathEscape(name string) string { return strings.ReplaceAll(name, "/", "%2F") }
