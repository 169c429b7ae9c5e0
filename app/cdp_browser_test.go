package app_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The browser tests drive one headless Chromium per test binary over the
// DevTools protocol: it talks through --remote-debugging-pipe, the
// protocol's JSON messages each ended by a NUL byte on the child's file
// descriptors 3 (commands) and 4 (answers and events): no WebSocket, no
// library. Each start of Chromium cost a core for seconds on a small
// machine, so it starts once, for the first test that asks, and every
// test (each of its former browsers) gets a browser context of its own:
// an off-the-record profile, its cookies and localStorage its own, shared
// by the tabs of that context only, as by the tabs of a browser.
type browserProcess struct {
	w      *os.File
	exited chan struct{} // closed when the browser has ended
	err    error         // why, once exited is closed

	mu       sync.Mutex
	next     int64
	replies  map[int64]chan cdpMessage
	events   map[string]chan cdpMessage // "session method": the one waiting for that event
	sessions map[string]*devtools       // each tab's session: whose it is (for its dialogs)
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// cdpWait bounds every wait on the browser (and on Node): its start
// included, on a machine loaded by the other tests.
const cdpWait = 30 * time.Second

var errBrowserEnded = errors.New("the browser ended")

// sharedBrowser is the one Chromium of the test binary, started now if
// none runs (or the last one ended).
var sharedBrowser struct {
	sync.Mutex
	p *browserProcess
}

// theBrowser returns the running Chromium, starting it if need be, once
// the test holds a browser slot (or is skipped: see EnvNoBrowser).
func theBrowser(tb testing.TB) *browserProcess {
	tb.Helper()
	bin := chromiumBinary(tb)
	sharedBrowser.Lock()
	defer sharedBrowser.Unlock()
	if p := sharedBrowser.p; p != nil {
		select {
		case <-p.exited:
		default:
			return p
		}
	}
	p, err := startBrowserProcess(bin)
	if err != nil {
		tb.Fatalf("chromium: %v", err)
	}
	sharedBrowser.p = p
	return p
}

// browserProfiles holds the profile directory of each test binary's
// browser (of this user), named after the binary's process id: a binary
// ends without a hook for its browser, so the next one removes those of
// ended ones.
var browserProfiles = filepath.Join(os.TempDir(), fmt.Sprintf("countersvc-test-chromium-%d", os.Getuid()))

func startBrowserProcess(bin string) (*browserProcess, error) {
	os.MkdirAll(browserProfiles, 0o755)
	if old, err := os.ReadDir(browserProfiles); err == nil {
		for _, d := range old {
			if pid, err := strconv.Atoi(d.Name()); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
				os.RemoveAll(filepath.Join(browserProfiles, d.Name()))
			}
		}
	}
	cmdR, cmdW, err := os.Pipe() // the browser reads its commands from fd 3
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // and writes its answers to fd 4
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(chromiumFlags,
		"--user-data-dir="+filepath.Join(browserProfiles, strconv.Itoa(os.Getpid())),
		"--remote-debugging-pipe", "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	// Pdeathsig ends it with the test binary; its helpers end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &browserProcess{w: cmdW, exited: make(chan struct{}), replies: map[int64]chan cdpMessage{},
		events: map[string]chan cdpMessage{}, sessions: map[string]*devtools{}}
	err = startBrowser(cmd, p.exited)
	cmdR.Close()
	outW.Close()
	if err != nil {
		cmdW.Close()
		outR.Close()
		return nil, err
	}
	go p.read(bufio.NewReader(outR))
	go func() {
		err := cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // and its helpers
		p.err = fmt.Errorf("%w: %v", errBrowserEnded, err)
		close(p.exited)
		cmdW.Close()
		outR.Close()
	}()
	return p, nil
}

// read delivers each answer to its caller and each awaited event to its
// waiter, and accepts every alert a page opens (keeping its message for
// the page's test): a dialog would stop the page's scripts.
func (p *browserProcess) read(r *bufio.Reader) {
	for {
		line, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		p.mu.Lock()
		if ch := p.replies[m.ID]; m.ID != 0 && ch != nil {
			delete(p.replies, m.ID)
			ch <- m
		}
		if ch := p.events[m.SessionID+" "+m.Method]; m.Method != "" && ch != nil {
			delete(p.events, m.SessionID+" "+m.Method)
			ch <- m
		}
		if m.Method == "Page.javascriptDialogOpening" {
			var d struct{ Message string }
			json.Unmarshal(m.Params, &d)
			if b := p.sessions[m.SessionID]; b != nil {
				b.dialogs = append(b.dialogs, d.Message)
			}
			p.send(m.SessionID, "Page.handleJavaScriptDialog", map[string]any{"accept": true})
		}
		p.mu.Unlock()
	}
}

// send writes a command (p.mu held) and returns its id.
func (p *browserProcess) send(session, method string, params any) int64 {
	p.next++
	msg, _ := json.Marshal(map[string]any{"id": p.next, "sessionId": session, "method": method, "params": params})
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": p.next, "method": method, "params": params})
	}
	p.w.Write(append(msg, 0))
	return p.next
}

// try runs a command and returns its result or its error.
func (p *browserProcess) try(session, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	ch := make(chan cdpMessage, 1)
	p.mu.Lock()
	id := p.send(session, method, params)
	p.replies[id] = ch
	p.mu.Unlock()
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("chromium: %s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-p.exited:
		return nil, fmt.Errorf("chromium: %s: %w", method, p.err)
	case <-time.After(cdpWait):
		return nil, fmt.Errorf("chromium: no answer to %s within %s", method, cdpWait)
	}
}

// expect returns a channel that gets the next event of the session
// named method; ask before the command that causes it.
func (p *browserProcess) expect(session, method string) <-chan cdpMessage {
	ch := make(chan cdpMessage, 1)
	p.mu.Lock()
	p.events[session+" "+method] = ch
	p.mu.Unlock()
	return ch
}

// devtools is one browser context of the shared Chromium, for one test
// (or one of the browsers a test starts): tabs it opens share its
// cookies and localStorage, as tabs of one browser do, and no other
// test's. It is disposed of, with its tabs, when the test ends.
type devtools struct {
	tb      testing.TB
	p       *browserProcess
	context string   // its browserContextId
	dialogs []string // the messages of the alerts its pages showed, accepted at once (p.mu)
	closed  bool
}

// startDevtools gives the test a browser of its own (a fresh context of
// the shared Chromium); it ends with the test.
func startDevtools(tb testing.TB) *devtools {
	tb.Helper()
	b := &devtools{tb: tb, p: theBrowser(tb)}
	var ctx struct{ BrowserContextID string }
	json.Unmarshal(b.call("", "Target.createBrowserContext", map[string]any{"disposeOnDetach": false}), &ctx)
	b.context = ctx.BrowserContextID
	tb.Cleanup(b.close)
	return b
}

// close disposes of the context and its tabs.
func (b *devtools) close() {
	if b.closed {
		return
	}
	b.closed = true
	b.p.try("", "Target.disposeBrowserContext", map[string]any{"browserContextId": b.context})
	b.p.mu.Lock()
	for s, owner := range b.p.sessions {
		if owner == b {
			delete(b.p.sessions, s)
		}
	}
	b.p.mu.Unlock()
}

// call runs a command and returns its result, failing the test on an error.
func (b *devtools) call(session, method string, params any) json.RawMessage {
	b.tb.Helper()
	res, err := b.p.try(session, method, params)
	if err != nil {
		b.tb.Fatal(err)
	}
	return res
}

// Dialogs are the messages of the alerts shown so far.
func (b *devtools) Dialogs() []string {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// downloadsTo saves what pages download into dir.
func (b *devtools) downloadsTo(dir string) {
	b.call("", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": dir, "browserContextId": b.context})
}

// tab is one page of the browser.
type tab struct {
	b       *devtools
	session string
}

// blank opens a tab of width x height CSS pixels (0: the browser's
// default) on about:blank.
func (b *devtools) blank(width, height int) *tab {
	b.tb.Helper()
	var target struct{ TargetID string }
	json.Unmarshal(b.call("", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": b.context}), &target)
	var attached struct{ SessionID string }
	json.Unmarshal(b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	t := &tab{b: b, session: attached.SessionID}
	b.p.mu.Lock()
	b.p.sessions[t.session] = b
	b.p.mu.Unlock()
	t.call("Page.enable", nil) // for its dialogs
	if width > 0 {
		t.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false})
	}
	return t
}

// open opens a tab of width x height CSS pixels on pageURL.
func (b *devtools) open(pageURL string, width, height int) *tab {
	b.tb.Helper()
	t := b.blank(width, height)
	t.navigate(pageURL)
	return t
}

// settle loads pageURL as chromium --headless --virtual-time-budget=10000
// (with --dump-dom or --screenshot) does, and returns once the page is
// done: once it has loaded, virtual time runs ahead while the page is
// idle but waits for the network, so the page's requests complete and
// its timers of the next 10 s fire.
func (t *tab) settle(pageURL string) {
	t.b.tb.Helper()
	loaded := t.b.p.expect(t.session, "Page.loadEventFired")
	var nav struct{ ErrorText string }
	json.Unmarshal(t.call("Page.navigate", map[string]any{"url": pageURL}), &nav)
	if nav.ErrorText != "" {
		t.b.tb.Fatalf("chromium: %s: %s", pageURL, nav.ErrorText)
	}
	t.await(pageURL+" to load", loaded, cdpWait)
	expired := t.b.p.expect(t.session, "Emulation.virtualTimeBudgetExpired")
	t.call("Emulation.setVirtualTimePolicy", map[string]any{"policy": "pauseIfNetworkFetchesPending", "budget": 10000})
	t.await(pageURL+"'s 10 s of virtual time to pass", expired, 90*time.Second)
}

// await waits for an event (from expect) at most d, or fails saying what.
func (t *tab) await(what string, event <-chan cdpMessage, d time.Duration) {
	t.b.tb.Helper()
	select {
	case <-event:
	case <-t.b.p.exited:
		t.b.tb.Fatalf("chromium: waiting for %s: %v", what, t.b.p.err)
	case <-time.After(d):
		t.b.tb.Fatalf("chromium: waited %s for %s", d, what)
	}
}

// dashboard opens the dashboard at pageURL in a browser of its own, in a
// window of width x height without scrollbars, and returns its tab once
// the page has drawn what it loaded. Not settle: the virtual time that
// passes once the page's fetches are done can run out between one of its
// answers and the script that draws it (a chart was seen empty so, on a
// loaded machine); the dashboard says itself when it is done.
func dashboard(tb testing.TB, pageURL string, width, height int) *tab {
	tb.Helper()
	t := startDevtools(tb).blank(width, height)
	t.call("Emulation.setScrollbarsHidden", map[string]any{"hidden": true})
	t.navigate(pageURL)
	t.dashboardReady()
	if msg := t.text(`[document.getElementById('error').textContent, document.getElementById('signin').hidden ? '' : document.getElementById('signin').textContent].join(' ').trim()`); msg != "" {
		tb.Fatalf("the dashboard at %s says: %s", pageURL, msg)
	}
	return t
}

// dom is the tab's DOM as its scripts left it.
func (t *tab) dom() string {
	t.b.tb.Helper()
	return t.text("document.documentElement.outerHTML")
}

// renderedDOM loads pageURL in a browser of its own, lets its scripts run
// and returns the DOM as they left it.
func renderedDOM(tb testing.TB, pageURL string) string {
	tb.Helper()
	b := startDevtools(tb)
	defer b.close()
	t := b.blank(0, 0)
	t.settle(pageURL)
	return t.dom()
}

// runChromium opens url in a browser of its own, in real time, until the
// test ends; the channel gets an error if the browser ends before.
func runChromium(tb testing.TB, url string) <-chan error {
	tb.Helper()
	b := startDevtools(tb)
	b.call("", "Target.createTarget", map[string]any{"url": url, "browserContextId": b.context})
	done, ended := make(chan error, 1), make(chan struct{})
	tb.Cleanup(func() { close(ended) })
	go func() {
		select {
		case <-b.p.exited:
			done <- b.p.err
		case <-ended:
		}
	}()
	return done
}

func (t *tab) call(method string, params any) json.RawMessage {
	t.b.tb.Helper()
	return t.b.call(t.session, method, params)
}

// navigate loads pageURL as a new document (through about:blank, so that
// a URL that differs from the current one only by its fragment loads the
// page again) and waits until it has loaded.
func (t *tab) navigate(pageURL string) {
	t.b.tb.Helper()
	t.call("Page.navigate", map[string]any{"url": "about:blank"})
	t.waitFor("about:blank", `location.href === 'about:blank' && document.readyState === 'complete'`)
	var nav struct{ ErrorText string }
	json.Unmarshal(t.call("Page.navigate", map[string]any{"url": pageURL}), &nav)
	if nav.ErrorText != "" {
		t.b.tb.Fatalf("chromium: %s: %s", pageURL, nav.ErrorText)
	}
	t.waitFor("the page "+pageURL+" loads", `document.readyState === 'complete' && location.href !== 'about:blank'`)
}

// eval runs a JavaScript expression in the page (awaiting a promise) and
// stores its value, as JSON, in v (nil: dropped).
func (t *tab) eval(expr string, v any) {
	t.b.tb.Helper()
	if err := t.try(expr, v); err != nil {
		t.b.tb.Fatal(err)
	}
}

// try is eval that returns its error: a thrown exception, or a page that
// went away meanwhile.
func (t *tab) try(expr string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	res, err := t.b.p.try(t.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	json.Unmarshal(res, &r)
	if r.ExceptionDetails != nil {
		return fmt.Errorf("chromium: %s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if v != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			return fmt.Errorf("chromium: %s gave %s: %v", expr, r.Result.Value, err)
		}
	}
	return nil
}

// text is the value of a JavaScript expression as a string.
func (t *tab) text(expr string) string {
	t.b.tb.Helper()
	var s any
	t.eval(expr, &s)
	if s == nil {
		return ""
	}
	return fmt.Sprint(s)
}

// waitFor waits until the expression is true, or fails saying what.
func (t *tab) waitFor(what, expr string) {
	t.b.tb.Helper()
	deadline := time.Now().Add(cdpWait)
	for {
		// Between two documents the page may have none: try again.
		var ok bool
		err := t.try("!!("+expr+")", &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			t.try("document.body && document.body.innerText", &body)
			t.b.tb.Fatalf("chromium: waited %s for %s (%s, last error %v); the page:\n%s", cdpWait, what, expr, err, body)
		}
		if errors.Is(err, errBrowserEnded) {
			t.b.tb.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dashboardReady waits until the dashboard has drawn what it loaded
// (it marks the document data-ready then).
func (t *tab) dashboardReady() {
	t.b.tb.Helper()
	t.waitFor("the dashboard to finish loading", `document.documentElement.hasAttribute('data-ready')`)
}

// screenshot saves the tab as a PNG at path.
func (t *tab) screenshot(path string) {
	t.b.tb.Helper()
	var shot struct{ Data string }
	json.Unmarshal(t.call("Page.captureScreenshot", map[string]any{"format": "png"}), &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) == 0 {
		t.b.tb.Fatalf("chromium: no screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.b.tb.Fatal(err)
	}
}

// chromiumFlags start headless Chromium quiet, with nothing of its own
// to do beside the tests' pages. Without site isolation a tab's sites
// share its renderer: half the renderer processes, a tenth less CPU for
// these tests (measured); what a page may read of another origin is
// decided as before (CORS and the same-origin policy do not depend on
// it), and each browser context still has renderers of its own.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-site-isolation-trials", "--disable-features=site-per-process,IsolateOrigins"}
