package app_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// docs/example.html, opened for the first time in a real browser on a
// service that has never seen its counter, counts the view, shows 1, and
// its badge shows the counter, not "hits | not found": the badge is asked
// for only once the snippet's hit has created it.
func theExamplePagesFirstViewShowsTheCountAndABadgeOfIt(t *testing.T) {
	env := apptest.New(t)
	target, _ := url.Parse(env.URL)

	// Between the browser and the service, a proxy that keeps what each
	// badge request was answered.
	var mu sync.Mutex
	var badges []string // status and body of each badge answer
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if !strings.HasSuffix(r.Request.URL.Path, "/badge.svg") {
			return nil
		}
		body, err := httputil.DumpResponse(r, true)
		mu.Lock()
		badges = append(badges, string(body))
		mu.Unlock()
		return err
	}
	service := httptest.NewServer(proxy)
	t.Cleanup(service.Close)

	html, err := os.ReadFile("../docs/example.html")
	if err != nil {
		t.Fatal(err)
	}
	// The page names the service at the address scripts/run serves.
	page := strings.ReplaceAll(string(html), "http://localhost:8080", service.URL)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	t.Cleanup(site.Close)

	dom := renderedDOM(t, site.URL+"/example.html")
	if !strings.Contains(dom, `data-format="comma">1</span>`) {
		t.Errorf("the page does not show 1 view; DOM:\n%s", dom)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(badges) != 1 {
		t.Fatalf("the page asked for its badge %d times, want once; DOM:\n%s", len(badges), dom)
	}
	if b := badges[0]; !strings.HasPrefix(b, "HTTP/1.1 200") || strings.Contains(b, "not found") || !strings.Contains(b, `aria-label="hits: 1"`) {
		t.Errorf("the first view's badge is not the counter's, hits: 1:\n%s", b)
	}
}
