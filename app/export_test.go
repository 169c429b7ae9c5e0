package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// Export streams every counter under the prefix, past the list's page
// size, in name order, one JSON object a line; other prefixes stay out.
func TestExportStreamsEveryCounterUnderThePrefixAsJSONLines(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	const n = 2345 // more than two pages of 1000
	for start := 0; start < n; start += 100 {
		var items []string
		for i := start; i < min(start+100, n); i++ {
			items = append(items, fmt.Sprintf(`{"name": "site/%05d", "by": %d}`, i, i+1))
		}
		if res := env.Do(t, "POST", "/v1/counters/batch", `{"increments": [`+strings.Join(items, ",")+`]}`); res.Status != 200 {
			t.Fatalf("batch: %d %s", res.Status, res.Body)
		}
	}
	env.Do(t, "PUT", "/v1/counters/other", `{"value": 1}`)
	env.Do(t, "PUT", "/v1/counters/site%2Fbounded", `{"value": 5, "min": 0, "max": 10}`)

	tests := []struct {
		prefix string
		want   int
	}{
		{"site/", n + 1},
		{"site/0000", 10},
		{"nothing/", 0},
		{"", n + 2},
	}
	for _, tc := range tests {
		res := env.Do(t, "GET", "/v1/export?prefix="+tc.prefix, "")
		if res.Status != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("prefix %q: status %d, Content-Type %q", tc.prefix, res.Status, res.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(bytes.NewReader(res.Body))
		lines, last := 0, ""
		for sc.Scan() {
			var c struct {
				Name      string
				Value     int64
				Min, Max  *int64
				CreatedAt string `json:"created_at"`
				Error     any
			}
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Error != nil || c.CreatedAt == "" {
				t.Fatalf("prefix %q, line %d: %q (%v)", tc.prefix, lines+1, sc.Text(), err)
			}
			if c.Name <= last || !strings.HasPrefix(c.Name, tc.prefix) {
				t.Fatalf("prefix %q, line %d: %q after %q", tc.prefix, lines+1, c.Name, last)
			}
			var i int64
			if _, err := fmt.Sscanf(c.Name, "site/%05d", &i); err == nil && c.Value != i+1 {
				t.Errorf("%s: value %d, want %d", c.Name, c.Value, i+1)
			}
			if c.Name == "site/bounded" && (c.Min == nil || *c.Min != 0 || c.Max == nil || *c.Max != 10) {
				t.Errorf("site/bounded: bounds %v %v, want 0 and 10", c.Min, c.Max)
			}
			last = c.Name
			lines++
		}
		if lines != tc.want {
			t.Errorf("prefix %q: %d lines, want %d", tc.prefix, lines, tc.want)
		}
	}
}

// An export is a backup: it holds every write answered before it began,
// even where a listing of the same prefix is still served from the cache.
func TestExportHoldsEveryAnsweredWriteWhileListsAreCached(t *testing.T) {
	t.Parallel()
	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	env.Do(t, "PUT", "/v1/counters/shop%2Fsold", `{"value": 1}`)
	if res := env.Do(t, "GET", "/v1/counters?prefix=shop/", ""); res.Status != 200 {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	for want := int64(2); want <= 5; want++ {
		if res := env.Do(t, "POST", "/v1/counters/shop%2Fsold/increment", ""); res.Status != 200 {
			t.Fatalf("increment: %d %s", res.Status, res.Body)
		}
		res := env.Do(t, "GET", "/v1/export?prefix=shop/", "")
		var line struct{ Value int64 }
		if err := json.Unmarshal(bytes.TrimSpace(res.Body), &line); err != nil || line.Value != want {
			t.Fatalf("export right after the increment answered %d: %s (%v), want value %d", want, res.Body, err, want)
		}
	}
}
