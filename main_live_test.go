package main_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// Two processes of the binary on one database and one Redis: under 1,000
// concurrent increments on A, a stream on B sees values that never go
// back, and the final value within a second of the last answer. Then
// SIGTERM ends B's stream within a second, and B exits cleanly.
func TestLiveStreamOnAnotherProcessSeesIncrementsInOrderAndEndsOnSIGTERM(t *testing.T) {
	dsn := storetest.MigratedDSN(t)
	redisURL := "COUNTERS_REDIS_URL=" + testenv.StartRedis(t).URL()
	bin := buildBinary(t)
	procs := startProcesses(t, bin, dsn, []string{redisURL}, []string{redisURL, "COUNTERS_SHUTDOWN_DRAIN=2s"})
	a, b := procs[0], procs[1]

	req, _ := http.NewRequest("PUT", a.url+"/v1/counters/live%2Fprocs", strings.NewReader(`{"value": 0}`))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 201 {
		t.Fatalf("creating the counter: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	s := apptest.OpenStream(t, b.url+"/v1/counters/live%2Fprocs/events")
	s.Next(t, 5*time.Second)
	time.Sleep(300 * time.Millisecond) // A hears that B watches the counter

	const n = 1000
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := client.Post(a.url+"/v1/counters/live%2Fprocs/increment", "application/json", nil)
			if err != nil {
				t.Error(err)
				return
			}
			r.Body.Close()
			if r.StatusCode != 200 {
				t.Errorf("increment: %d", r.StatusCode)
			}
		}()
	}
	wg.Wait()
	last := time.Now()
	seen := s.Until(t, n, time.Second)
	t.Logf("%d events for %d increments, the last %v after the last answer", len(seen), n, time.Since(last).Round(time.Millisecond))
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("values went back: %v", seen)
		}
	}

	start := time.Now()
	exited := b.terminate()
	select {
	case <-s.Done:
		t.Logf("the stream ended %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(time.Second):
		t.Fatalf("the stream still open %v after SIGTERM", time.Since(start))
	}
	b.waitExit(t, exited, 15*time.Second)
}
