package app_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// devtools is headless Chromium driven over the DevTools protocol, for
// the tests that click, type and look again (renderedDOM only loads a
// page). It talks through --remote-debugging-pipe, the protocol's JSON
// messages each ended by a NUL byte on the child's file descriptors 3
// (commands) and 4 (answers and events): no WebSocket, no library. Tabs
// of one browser share its profile, so what a page keeps in localStorage
// is there for the next page of its origin, as in a real browser.
type devtools struct {
	tb  testing.TB
	cmd *exec.Cmd
	w   *os.File

	mu      sync.Mutex
	next    int64
	replies map[int64]chan cdpMessage
	dialogs []string // the messages of the alerts pages showed, accepted at once
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

// startDevtools starts headless Chromium for the test; it ends with it.
func startDevtools(tb testing.TB) *devtools {
	tb.Helper()
	bin := chromiumBinary(tb)
	cmdR, cmdW, err := os.Pipe() // the browser reads its commands from fd 3
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe() // and writes its answers to fd 4
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, append(chromiumFlags(tb), "--remote-debugging-pipe", "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Its helper processes inherit stderr: Wait stops waiting for them.
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := startBrowser(tb, cmd); err != nil {
		tb.Fatalf("chromium: %v", err)
	}
	cmdR.Close()
	outW.Close()
	b := &devtools{tb: tb, cmd: cmd, w: cmdW, replies: map[int64]chan cdpMessage{}}
	done := make(chan struct{})
	go b.read(bufio.NewReader(outR), done)
	tb.Cleanup(func() {
		cmdW.Close() // the browser exits when its pipe closes
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // and its helpers
		cmd.Wait()
		outR.Close()
	})
	return b
}

// read delivers each answer to its caller, and accepts every alert a page
// opens (keeping its message): a dialog would stop the page's scripts.
func (b *devtools) read(r *bufio.Reader, done chan struct{}) {
	defer close(done)
	for {
		line, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch := b.replies[m.ID]; m.ID != 0 && ch != nil {
			delete(b.replies, m.ID)
			ch <- m
		}
		if m.Method == "Page.javascriptDialogOpening" {
			var d struct{ Message string }
			json.Unmarshal(m.Params, &d)
			b.dialogs = append(b.dialogs, d.Message)
			b.send(m.SessionID, "Page.handleJavaScriptDialog", map[string]any{"accept": true})
		}
		b.mu.Unlock()
	}
}

// send writes a command (b.mu held) and returns its id.
func (b *devtools) send(session, method string, params any) int64 {
	b.next++
	msg, _ := json.Marshal(map[string]any{"id": b.next, "sessionId": session, "method": method, "params": params})
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": b.next, "method": method, "params": params})
	}
	b.w.Write(append(msg, 0))
	return b.next
}

// call runs a command and returns its result, failing the test on an error.
func (b *devtools) call(session, method string, params any) json.RawMessage {
	b.tb.Helper()
	res, err := b.try(session, method, params)
	if err != nil {
		b.tb.Fatal(err)
	}
	return res
}

// try runs a command and returns its result or its error.
func (b *devtools) try(session, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	id := b.send(session, method, params)
	b.replies[id] = ch
	b.mu.Unlock()
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("chromium: %s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-time.After(cdpWait):
		return nil, fmt.Errorf("chromium: no answer to %s within %s", method, cdpWait)
	}
}

// Dialogs are the messages of the alerts shown so far.
func (b *devtools) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// downloadsTo saves what pages download into dir.
func (b *devtools) downloadsTo(dir string) {
	b.call("", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": dir})
}

// tab is one page of the browser.
type tab struct {
	b       *devtools
	session string
}

// open opens a tab of width x height CSS pixels on pageURL.
func (b *devtools) open(pageURL string, width, height int) *tab {
	b.tb.Helper()
	var target struct{ TargetID string }
	json.Unmarshal(b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target)
	var attached struct{ SessionID string }
	json.Unmarshal(b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	t := &tab{b: b, session: attached.SessionID}
	t.call("Page.enable", nil) // for its dialogs
	t.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false})
	t.navigate(pageURL)
	return t
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
	res, err := t.b.try(t.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
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
