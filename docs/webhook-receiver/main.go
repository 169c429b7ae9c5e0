// Command webhook-receiver is the receiver of docs/webhooks.md: it checks
// each call's signature with the Standard Webhooks library, acts once per
// webhook-id (a call may come more than once), and prints the crossing.
//
//	WEBHOOK_SECRET=whsec_... ADDR=127.0.0.1:9000 go run ./docs/webhook-receiver
//
// It serves POST /hooks/counters, and says so of every other request,
// which it answers 404.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// event is the body of a call (see docs/webhooks.md).
type event struct {
	Type string `json:"type"`
	Data struct {
		Name      string `json:"name"`
		Threshold int64  `json:"threshold"`
		Direction string `json:"direction"`
		Previous  int64  `json:"previous"`
		Value     int64  `json:"value"`
	} `json:"data"`
}

func main() {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET: %v", err)
	}
	// The ids already acted on. A real receiver keeps them where its
	// action is recorded (a unique key in its own database), so that the
	// action and the id commit together.
	var mu sync.Mutex
	seen := map[string]bool{}

	http.HandleFunc("POST /hooks/counters", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		// Verify checks the signature over the exact bytes received and
		// that webhook-timestamp is within 5 minutes of now.
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("webhook-id")
		mu.Lock()
		repeat := seen[id]
		seen[id] = true
		mu.Unlock()
		if repeat {
			w.WriteHeader(http.StatusNoContent) // acted on already: say so again
			return
		}
		var e event
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		fmt.Printf("%s %s crossed %d %s (%d -> %d)\n", id, e.Data.Name, e.Data.Threshold, e.Data.Direction, e.Data.Previous, e.Data.Value)
		w.WriteHeader(http.StatusNoContent) // answer fast: slow work belongs in a queue of your own
	})
	// A hook registered with another path would otherwise meet silent
	// 404s: say what came, and what is served.
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("404 for %s %s: this receiver serves POST /hooks/counters", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = ":9000"
	}
	log.Fatal(http.ListenAndServe(addr, nil))
}
