package app_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// An order touching several tallies: every item applied in request order
// (a repeated name sees the earlier item), values in request order.
func TestBatchAppliesItemsInRequestOrder(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"revenue%2Fcents", `{"value": 1000}`), 201, "")
	r := env.Do(t, "POST", "/v1/counters/batch", batchBody(
		item(p+"books/Bulldozer", 2), item(p+"revenue/cents", 2598), item(p+"books/Bulldozer", -1), item(p+"orders", 0)))
	wantStatus(t, r, 200, "")
	want := strings.ReplaceAll(`{"counters":[{"name":"P-books/Bulldozer","value":2},{"name":"P-revenue/cents","value":3598},`+
		`{"name":"P-books/Bulldozer","value":1},{"name":"P-orders","value":0}]}`, "P-", p)
	if string(r.Body) != want {
		t.Errorf("got %s\nwant %s", r.Body, want)
	}
	wantValue(t, env, p+"books%2FBulldozer", 1)
	wantValue(t, env, p+"revenue%2Fcents", 3598)
	wantValue(t, env, p+"orders", 0)
}

// Any failing item fails the whole batch with that item's status and a
// message naming it; nothing changes, and counters the batch would have
// created do not exist.
func TestBatchWithFailingItemChangesNothing(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"big", `{"value": 9223372036854775806}`), 201, "")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"stock", `{"value": 1, "min": 0}`), 201, "")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"capped", `{"value": 9, "max": 10}`), 201, "")
	many := make([]string, 101)
	for i := range many {
		many[i] = item(fmt.Sprint(p, "n", i), 1)
	}
	tests := []struct {
		name    string
		body    string
		status  int
		code    string
		message string // part of the message
	}{
		{"overflow", batchBody(item(p+"new", 1), item(p+"big", 1), item(p+"big", 1)), 422, "out_of_range", `increments[2] ("` + p + `big")`},
		{"below min", batchBody(item(p+"stock", -1), item(p+"new", 1), item(p+"stock", -1)), 422, "out_of_range", `increments[2] ("` + p + `stock")`},
		{"above max", batchBody(item(p+"new", 1), item(p+"capped", 2)), 422, "out_of_range", `increments[1] ("` + p + `capped")`},
		{"bad name", batchBody(item(p+"new", 1), item("", 1)), 400, "invalid_argument", "increments[1]"},
		{"control character", batchBody(item(p+"new", 1), item(p+"a\nb", 1)), 400, "invalid_argument", "increments[1]"},
		{"reserved name", batchBody(item(p+"new", 1), item("_board/1", 1)), 403, "permission_denied", `increments[1] ("_board/1")`},
		{"fraction", `{"increments": [{"name": "` + p + `new", "by": 1}, {"name": "` + p + `x", "by": 1.5}]}`, 400, "invalid_argument", "increments[1]"},
		{"missing by", `{"increments": [{"name": "` + p + `new", "by": 1}, {"name": "` + p + `x"}]}`, 400, "invalid_argument", "increments[1]"},
		{"unknown field", `{"increments": [{"name": "` + p + `new", "by": 1, "step": 2}]}`, 400, "invalid_argument", "increments[0]"},
		{"item not an object", `{"increments": [{"name": "` + p + `new", "by": 1}, 7]}`, 400, "invalid_argument", "increments[1]"},
		{"no items", `{"increments": []}`, 400, "invalid_argument", "1 to 100"},
		{"101 items", batchBody(many...), 400, "invalid_argument", "1 to 100"},
		{"not a list", `{"increments": {"name": "` + p + `new", "by": 1}}`, 400, "invalid_argument", "list"},
		{"no increments", `{}`, 400, "invalid_argument", "increments"},
		{"unknown top-level field", `{"increments": [{"name": "` + p + `new", "by": 1}], "dry_run": true}`, 400, "invalid_argument", "dry_run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.Do(t, "POST", "/v1/counters/batch", tt.body)
			wantStatus(t, r, tt.status, tt.code)
			if !strings.Contains(string(r.Body), strings.ReplaceAll(tt.message, `"`, `\"`)) {
				t.Errorf("message %s does not contain %s", r.Body, tt.message)
			}
		})
	}
	wantValue(t, env, p+"big", 9223372036854775806)
	wantValue(t, env, p+"stock", 1)
	wantValue(t, env, p+"capped", 9)
	for _, name := range []string{"new", "n0", "x"} {
		if _, ok := valueOf(t, env, p+name); ok {
			t.Errorf("failed batch created %s", name)
		}
	}
}

// Two clients send orders over the same counters with the items in
// opposite orders. The locks are taken in name order, and a deadlock would
// be retried inside: no client ever sees an error, and the totals are exact.
// 100 rounds each keep the two clients' batches overlapping throughout.
func TestConcurrentBatchesInOppositeOrdersNeverFail(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	names := []string{"tally/a", "tally/b", "tally/c", "tally/d"}
	const rounds = 100
	orders := [][]string{{}, {}}
	for _, n := range names {
		orders[0] = append(orders[0], item(n, 1))
		orders[1] = append([]string{item(n, 1)}, orders[1]...)
	}
	var wg sync.WaitGroup
	failures := make(chan string, 2*rounds)
	for _, order := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				r, err := env.TryDo("POST", "/v1/counters/batch", batchBody(order...))
				if err != nil || r.Status != 200 {
					failures <- fmt.Sprintf("%d %s %v", r.Status, r.Body, err)
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	for _, n := range names {
		wantValue(t, env, strings.ReplaceAll(n, "/", "%2F"), 2*rounds)
	}
}
