package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// hookCall is one call a receiver got.
type hookCall struct {
	header http.Header
	body   []byte
}

// hookReceiver records the calls it gets; block, when set, is run before a
// call's answer (204).
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	calls []hookCall
	block func(n int, r *http.Request) int
}

func newHookReceiver(t *testing.T, block func(n int, r *http.Request) int) *hookReceiver {
	t.Helper()
	h := &hookReceiver{block: block}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		n := len(h.calls)
		h.calls = append(h.calls, hookCall{r.Header.Clone(), body})
		h.mu.Unlock()
		status := http.StatusNoContent
		if h.block != nil {
			status = h.block(n, r)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) snapshot() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookCall(nil), h.calls...)
}

// hookEvent is a call's verified event, by the Standard Webhooks library.
type hookEvent struct {
	id   string
	data struct {
		Name                       string
		Threshold, Previous, Value int64
		Direction                  string
	}
}

func verifyCall(t *testing.T, secret string, c hookCall) hookEvent {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(c.body, c.header); err != nil {
		t.Fatalf("the Standard Webhooks library refuses %s: %v", c.body, err)
	}
	var e struct {
		Data json.RawMessage
	}
	var ev hookEvent
	if err := json.Unmarshal(c.body, &e); err != nil || json.Unmarshal(e.Data, &ev.data) != nil {
		t.Fatalf("event %s", c.body)
	}
	ev.id = c.header.Get("webhook-id")
	return ev
}

// newHook creates a hook through p and returns its id and secret.
func newHook(t *testing.T, p *process, body string) (int64, string) {
	t.Helper()
	status, out := send(t, "POST", p.url+"/v1/webhooks", body)
	var h struct {
		ID     int64
		Secret string
	}
	if status != 201 || json.Unmarshal([]byte(out), &h) != nil {
		t.Fatalf("POST /v1/webhooks: %d %s", status, out)
	}
	return h.ID, h.Secret
}

// twoProcessesWithRedis starts two processes of the service on one
// database and one Redis, allowed to call the receiver it returns.
func twoProcessesWithRedis(t *testing.T) ([]*process, *hookReceiver) {
	t.Helper()
	dsn := storetest.MigratedDSN(t)
	env := []string{"COUNTERS_WEBHOOK_ALLOW_PRIVATE=true", "COUNTERS_REDIS_URL=" + testenv.StartRedis(t).URL()}
	bin := buildBinary(t)
	return startProcesses(t, bin, dsn, env, env), newHookReceiver(t, nil)
}

// 2,500 increments racing through two processes over thresholds 1,000 and
// 2,000, starting right after the hook was created on one of them: one
// event each, whichever process committed it, signed so that the Standard
// Webhooks library accepts it.
func TestTwoProcessesSendOneEventPerCrossing(t *testing.T) {
	procs, rcv := twoProcessesWithRedis(t)
	hook, secret := newHook(t, procs[0], `{"url": "`+rcv.URL+`", "name": "race/sold", "thresholds": [1000, 2000]}`)
	// The other process is told through Redis; without it, it could take a
	// second (storage.ReloadEvery) and miss a crossing.
	time.Sleep(300 * time.Millisecond)

	const workers, each = 10, 250
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, err := client.Post(procs[w%2].url+"/v1/counters/race%2Fsold/increment", "application/json", nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if r.StatusCode != 200 {
					t.Errorf("increment: %d", r.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for len(rcv.snapshot()) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// Each crossing's event is recorded in the transaction of the
	// increment that made it, and every increment has been answered: the
	// hook's deliveries are every event there will be, called or not yet,
	// so an event too many is listed now rather than called later.
	status, out := send(t, "GET", fmt.Sprintf("%s/v1/webhooks/%d/deliveries?limit=10", procs[1].url, hook), "")
	var list struct{ Deliveries []struct{ ID string } }
	if status != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list.Deliveries) != 2 {
		t.Fatalf("deliveries: %d %s, want the two crossings' events", status, out)
	}
	ids := map[int64]map[string]bool{}
	for _, c := range rcv.snapshot() {
		ev := verifyCall(t, secret, c)
		d := ev.data
		if d.Name != "race/sold" || d.Direction != "up" || !(d.Previous < d.Threshold && d.Threshold <= d.Value) {
			t.Errorf("event %s", c.body)
		}
		if ids[d.Threshold] == nil {
			ids[d.Threshold] = map[string]bool{}
		}
		ids[d.Threshold][ev.id] = true
	}
	if len(ids) != 2 || len(ids[1000]) != 1 || len(ids[2000]) != 1 {
		t.Fatalf("events by threshold and id: %v", ids)
	}
}

// The process that committed a crossing is killed (SIGKILL) right after
// its answer: another process delivers the event within a minute.
func TestAnotherProcessDeliversAfterTheCommitterIsKilled(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dsn := storetest.MigratedDSN(t)
	env := []string{"COUNTERS_WEBHOOK_ALLOW_PRIVATE=true"}
	procs := startProcesses(t, bin, dsn, env, env)
	committer, other := procs[0], procs[1]
	// A call that comes before the kill hangs until its caller goes away:
	// a committer that got as far as calling dies during the call. One
	// killed before it called leaves the whole delivery to the other.
	var dead atomic.Bool
	rcv := newHookReceiver(t, func(n int, r *http.Request) int {
		if !dead.Load() {
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	hookID, secret := newHook(t, committer, `{"url": "`+rcv.URL+`", "name": "kill/x", "thresholds": [1]}`)

	if status, out := send(t, "POST", committer.url+"/v1/counters/kill%2Fx/increment", ""); status != 200 {
		t.Fatalf("increment: %d %s", status, out)
	}
	dead.Store(true)
	committer.cmd.Process.Kill()
	killed := time.Now()

	for {
		status, out := send(t, "GET", fmt.Sprintf("%s/v1/webhooks/%d/deliveries", other.url, hookID), "")
		var list struct{ Deliveries []struct{ ID, Status string } }
		if status != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list.Deliveries) != 1 {
			t.Fatalf("deliveries: %d %s", status, out)
		}
		if list.Deliveries[0].Status == "delivered" {
			calls := rcv.snapshot()
			last := verifyCall(t, secret, calls[len(calls)-1])
			if last.id != list.Deliveries[0].ID || last.data.Threshold != 1 {
				t.Fatalf("delivered %s as %s", calls[len(calls)-1].body, list.Deliveries[0].ID)
			}
			t.Logf("delivered %v after the kill, in %d calls", time.Since(killed).Round(time.Second), len(calls))
			return
		}
		if time.Since(killed) > time.Minute {
			t.Fatalf("not delivered within a minute of the kill: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The receiver that docs/webhooks.md shows takes the service's calls
// (verified by the Standard Webhooks library) and refuses a forged one.
func TestTheGuidesReceiverAcceptsTheServicesCallsAndRefusesForgedOnes(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	receiverBin := filepath.Join(t.TempDir(), "webhook-receiver")
	if out, err := testenv.GoCommand(context.Background(), "build", "-o", receiverBin, "./docs/webhook-receiver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	p := startProcess(t, bin, storetest.MigratedDSN(t), "COUNTERS_WEBHOOK_ALLOW_PRIVATE=true")
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	_, secret := newHook(t, p, `{"url": "http://`+addr+`/hooks/counters", "name": "stock/widget", "thresholds": [0], "direction": "down"}`)

	var out syncBuffer
	cmd := exec.Command(receiverBin)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "ADDR="+addr)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	forged, _ := http.NewRequest("POST", "http://"+addr+"/hooks/counters", strings.NewReader(`{"type": "counter.threshold"}`))
	forged.Header.Set("webhook-id", "msg_forged")
	forged.Header.Set("webhook-timestamp", fmt.Sprint(time.Now().Unix()))
	forged.Header.Set("webhook-signature", "v1,bm90IGEgc2lnbmF0dXJl")
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		r, err := http.DefaultClient.Do(forged)
		if err == nil {
			r.Body.Close()
			if r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a forged call: %d", r.StatusCode)
			}
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the receiver does not listen: %v: %s", err, out.String())
		}
		forged.Body = io.NopCloser(strings.NewReader(`{"type": "counter.threshold"}`))
	}

	send(t, "PUT", p.url+"/v1/counters/stock%2Fwidget", `{"value": 1}`)
	send(t, "POST", p.url+"/v1/counters/stock%2Fwidget/increment", `{"by": -1}`)
	for start := time.Now(); !strings.Contains(out.String(), " stock/widget crossed 0 down (1 -> 0)\n"); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the receiver printed: %q", out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A hook created through one process applies on another at once, told
// through Redis, well within the second of its periodic reload.
func TestAHookAppliesOnEveryProcessAtOnceThroughRedis(t *testing.T) {
	procs, rcv := twoProcessesWithRedis(t)
	for i := range 5 {
		name := fmt.Sprintf("fresh/%d", i)
		id, _ := newHook(t, procs[0], `{"url": "`+rcv.URL+`", "name": "`+name+`", "thresholds": [1]}`)
		time.Sleep(250 * time.Millisecond) // a quarter of the periodic reload's second
		if status, out := send(t, "POST", procs[1].url+"/v1/counters/"+strings.ReplaceAll(name, "/", "%2F")+"/increment", ""); status != 200 {
			t.Fatalf("increment: %d %s", status, out)
		}
		_, out := send(t, "GET", fmt.Sprintf("%s/v1/webhooks/%d/deliveries", procs[1].url, id), "")
		if !strings.Contains(out, `"threshold":1`) {
			t.Fatalf("hook %d: the other process recorded no event 250 ms after the hook was made: %s", i, out)
		}
	}
}
