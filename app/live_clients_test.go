package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// cutter is a TCP proxy to the service whose connections the test can cut,
// as a network that drops a client's stream does.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	dials int
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	t.Cleanup(func() { ln.Close(); c.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", strings.TrimPrefix(target, "http://"))
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.dials++
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) url() string { return "http://" + c.ln.Addr().String() }

// cut closes every connection through the proxy.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// connections is how many connections went through the proxy.
func (c *cutter) connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// resumeScenario drives a client that shows each value it gets: it must
// show 1, then after its stream is cut and the counter moved to 2 meanwhile,
// 2 (once: it resumed with its Last-Event-ID), then after a cut with no
// change nothing until 3. wait blocks until the client has shown n values.
func resumeScenario(t *testing.T, e *apptest.Env, proxy *cutter, wait func(n int) []string) {
	t.Helper()
	wait(1)
	proxy.cut()
	increment(t, e, "hits%2Fresume") // 2, while the client is away
	wait(2)
	dials := proxy.connections()
	proxy.cut()
	deadline := time.Now().Add(10 * time.Second)
	for proxy.connections() == dials { // the client is back (after retry:)
		if time.Now().After(deadline) {
			t.Fatal("the client did not reconnect after its stream was cut")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // it would have had a repeat by now
	increment(t, e, "hits%2Fresume")   // 3
	if got := strings.Join(wait(3), " "); got != "1 2 3" {
		t.Fatalf("the client showed %q, want \"1 2 3\"", got)
	}
}

// Node's usual client (the npm package eventsource) reconnects by itself
// after a cut and resumes with the stream's ids: no value is lost, none
// repeated. Skipped without node and npm.
func TestNodeEventSourceReconnectsAndResumes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH: scripts/test puts npm there (fetched from the npm registry into .local/npm)")
	}
	dir := filepath.Join(os.TempDir(), "countersvc-test-npm")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "eventsource")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		os.MkdirAll(dir, 0o755)
		if out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "eventsource@2.0.2").CombinedOutput(); err != nil {
			t.Skipf("npm could not install eventsource: %v\n%s", err, out)
		}
	}
	e := apptest.New(t, liveOptions)
	e.Do(t, "PUT", "/v1/counters/hits%2Fresume", `{"value": 1}`)
	proxy := newCutter(t, e.URL)
	script := `const EventSource = require("eventsource");
const es = new EventSource(process.env.STREAM_URL);
es.addEventListener("counter", (ev) => console.log(JSON.parse(ev.data).value));`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "-e", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"), "STREAM_URL="+proxy.url()+"/v1/hits/hits%2Fresume/events")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var shown []string
	resumeScenario(t, e, proxy, func(n int) []string {
		t.Helper()
		for len(shown) < n {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("node ended; it showed %v", shown)
				}
				shown = append(shown, l)
			case <-time.After(cdpWait):
				t.Fatalf("node showed %v, waiting for %d values", shown, n)
			}
		}
		return shown
	})
}

// A browser's EventSource, on a page of another origin, reads the public
// stream (CORS), reconnects by itself after a cut and resumes with the
// stream's ids.
func browserEventSourceReconnectsAndResumes(t *testing.T) {
	e := apptest.New(t, liveOptions)
	e.Do(t, "PUT", "/v1/counters/hits%2Fresume", `{"value": 1}`)
	proxy := newCutter(t, e.URL)
	shown := make(chan string, 100)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/shown" {
			shown <- r.URL.Query().Get("values")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><pre id="values"></pre><script>
const es = new EventSource(%q);
es.addEventListener("counter", (ev) => {
  const pre = document.getElementById("values");
  pre.textContent += (pre.textContent ? " " : "") + JSON.parse(ev.data).value;
  fetch("/shown?values=" + encodeURIComponent(pre.textContent));
});
</script></body></html>`, proxy.url()+"/v1/hits/hits%2Fresume/events")
	}))
	t.Cleanup(page.Close)

	// Chromium's virtual time (--dump-dom) would skip the waits this
	// test needs: the browser runs in real time until the test ends, and
	// the page reports what it shows.
	done := runChromium(t, page.URL)
	var last []string
	resumeScenario(t, e, proxy, func(n int) []string {
		t.Helper()
		for len(last) < n {
			select {
			case v := <-shown:
				last = strings.Fields(v)
			case err := <-done:
				t.Fatalf("the browser ended early (%v); it showed %v", err, last)
			case <-time.After(cdpWait):
				t.Fatalf("the browser showed %v, waiting for %d values", last, n)
			}
		}
		return last
	})
}

// The snippet with data-live counts the page view, shows the value, and
// then shows each change in place as the page's stream sends it.
func TestSnippetLiveModeUpdatesTheValueInPlace(t *testing.T) { // alone: beside the parallel tests on a loaded machine its page twice showed nothing within 30 s
	e := apptest.New(t, liveOptions)
	e.Do(t, "PUT", "/v1/counters/hits%2Flive-page", `{"value": 1233}`)
	shown := make(chan string, 100)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/shown" {
			shown <- r.URL.Query().Get("value")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The page's own script reports each value the snippet writes.
		fmt.Fprintf(w, `<!DOCTYPE html><html><body>
<p>Viewed <span id="views" data-counter-value data-format="comma">…</span> times.</p>
<script async src="%s/v1/snippet.js" data-name="hits/live-page" data-live></script>
<script>
new MutationObserver(() => fetch("/shown?value=" + encodeURIComponent(document.getElementById("views").textContent)))
  .observe(document.getElementById("views"), {childList: true, characterData: true, subtree: true});
</script></body></html>`, e.URL)
	}))
	t.Cleanup(page.Close)
	done := runChromium(t, page.URL)
	want := func(v string) {
		t.Helper()
		for {
			select {
			case got := <-shown:
				if got == v {
					return
				}
			case err := <-done:
				t.Fatalf("the browser ended early (%v)", err)
			case <-time.After(cdpWait): // Chromium's start included, on a loaded machine
				t.Fatalf("the page never showed %q within %v", v, cdpWait)
			}
		}
	}
	want("1,234") // the page view, counted
	e.Do(t, "POST", "/v1/counters/hits%2Flive-page/increment?by=10", "")
	want("1,244") // live, without a reload
	if got := e.Stored(t, "hits/live-page"); got != 1244 {
		t.Errorf("stored %d, want 1244: the stream must count no hit", got)
	}
}

// The dashboard's list of a prefix's counters updates live: a value that
// changes while the page is open is shown without a reload. The page is
// the service's own, framed by a page of the test on the same origin (a
// proxy in front of the service) whose script reports each change of the
// list, so that Chromium runs in real time, not against a virtual clock
// that may end the page before the event arrives. The frame is allowed
// by the proxy alone.
func dashboardUpdatesValuesLive(t *testing.T) {
	e := apptest.New(t, liveOptions)
	e.Do(t, "PUT", "/v1/counters/shop%2Fa", `{"value": 6}`)
	target, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	service := httputil.NewSingleHostReverseProxy(target)
	direct := service.Director
	service.Director = func(r *http.Request) {
		direct(r)
		r.Header["X-Forwarded-For"] = nil // a browser of this machine, as the service sees it without a proxy
	}
	// The dashboard refuses to be framed (frame-ancestors 'none'); the
	// test's frame is of its origin, the rest of its policy stays.
	service.ModifyResponse = func(r *http.Response) error {
		if csp := r.Header.Get("Content-Security-Policy"); csp != "" {
			r.Header.Set("Content-Security-Policy", strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self'", 1))
		}
		return nil
	}
	listed := make(chan string, 100)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/listed":
			listed <- r.URL.Query().Get("rows")
		case "/framed":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!DOCTYPE html><html><body>
<iframe id="f" src="/dashboard?prefix=shop/"></iframe>
<script>
const f = document.getElementById("f");
f.addEventListener("load", () => {
  const doc = f.contentDocument;
  const report = () => fetch("/listed?rows=" + encodeURIComponent(
    Array.from(doc.querySelectorAll("tr")).map(tr => tr.textContent).join(" ")));
  new MutationObserver(report).observe(doc.body, {childList: true, characterData: true, subtree: true});
  report();
});
</script></body></html>`)
		default:
			service.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(page.Close)
	done := runChromium(t, page.URL+"/framed")
	deadline := time.Now().Add(60 * time.Second)
	for e.Live.Open() == 0 { // the page's stream is open
		if time.Now().After(deadline) {
			t.Fatal("the dashboard opened no stream")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.Do(t, "POST", "/v1/counters/shop%2Fa/increment?by=1000", "")
	var last string
	for {
		select {
		case rows := <-listed:
			if last = rows; strings.Contains(rows, "shop/a1,006") {
				return
			}
		case err := <-done:
			t.Fatalf("the browser ended early (%v)", err)
		case <-time.After(cdpWait):
			t.Fatalf("the dashboard never listed shop/a at 1,006; last listed %q", last)
		}
	}
}
