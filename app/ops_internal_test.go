package app

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
)

// /readyz tells a MySQL that does not answer from one that answers but
// reports a state that is not ready (a Galera node not Synced), and says
// which; either is a 503.
func TestReadyzSaysWhetherMySQLIsDownOrNotSynced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		check  error
		status int
		want   string
	}{
		{"answers", nil, 200, `{"status":"ok","mysql":"ok","redis":"disabled"}`},
		{"does not answer", context.DeadlineExceeded, 503, `{"status":"unavailable","mysql":"down","redis":"disabled"}`},
		{"a Galera node not synced", counters.Errorf(counters.EUNAVAILABLE, "Joined, not Synced."), 503,
			`{"status":"unavailable","mysql":"not_synced","redis":"disabled","detail":"Joined, not Synced."}`},
		{"driver text stays out", errors.New("dial tcp: i/o timeout"), 503, `{"status":"unavailable","mysql":"down","redis":"disabled"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &opsHandlers{mysql: func(context.Context) error { return tc.check }}
			app := fiber.New()
			app.Get("/readyz", h.readyz)
			res, err := app.Test(httptest.NewRequest("GET", "/readyz", nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status || string(body) != tc.want {
				t.Errorf("got %d %s, want %d %s", res.StatusCode, body, tc.status, tc.want)
			}
		})
	}
}
