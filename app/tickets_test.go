package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

type boardBody struct {
	ID        int64  `json:"id"`
	CompanyID int64  `json:"company_id"`
	Slug      string `json:"slug"`
	Title     string `json:"title"`
	CreatedAt string `json:"created_at"`
}

type ticketBody struct {
	ID          int64  `json:"id"`
	BoardID     int64  `json:"board_id"`
	LocalID     int64  `json:"local_id"`
	Key         string `json:"key"`
	Title       string `json:"title"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
}

type ticketPageBody struct {
	Tickets   []ticketBody `json:"tickets"`
	NextAfter *int64       `json:"next_after"`
}

func createBoard(tb testing.TB, env *apptest.Env, company int64, slug string) boardBody {
	tb.Helper()
	r := env.Do(tb, "POST", "/v1/boards", fmt.Sprintf(`{"company_id": %d, "slug": %q, "title": "Board %s"}`, company, slug, slug))
	if r.Status != 201 {
		tb.Fatalf("creating board %s: %d %s", slug, r.Status, r.Body)
	}
	var b boardBody
	r.Decode(tb, &b)
	return b
}

func createTicket(tb testing.TB, env *apptest.Env, boardID int64, title string) ticketBody {
	tb.Helper()
	r := env.Do(tb, "POST", fmt.Sprintf("/v1/boards/%d/tickets", boardID), fmt.Sprintf(`{"title": %q}`, title))
	if r.Status != 201 {
		tb.Fatalf("creating ticket on board %d: %d %s", boardID, r.Status, r.Body)
	}
	var t ticketBody
	r.Decode(tb, &t)
	return t
}

func TestCreateBoardUpperCasesTheSlugAndAnswers201(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	b := createBoard(t, env, co, "ninja")
	if b.ID < 1 || b.CompanyID != co || b.Slug != "NINJA" || b.Title != "Board ninja" || b.CreatedAt == "" {
		t.Fatalf("board = %+v", b)
	}
	r := env.Do(t, "GET", fmt.Sprintf("/v1/boards/%d", b.ID), "")
	var got boardBody
	r.Decode(t, &got)
	if r.Status != 200 || got != b {
		t.Fatalf("GET board: %d %+v, want %+v", r.Status, got, b)
	}
}

func TestCreateBoardRefusesBadBodies(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	tests := []struct {
		name, body string
	}{
		{"slug starts with a digit", `{"company_id": 1, "slug": "1NINJA", "title": "t"}`},
		{"slug too long", `{"company_id": 1, "slug": "ABCDEFGHIJK", "title": "t"}`},
		{"slug with a dash", `{"company_id": 1, "slug": "NIN-JA", "title": "t"}`},
		{"slug empty", `{"company_id": 1, "slug": "", "title": "t"}`},
		{"slug missing", `{"company_id": 1, "title": "t"}`},
		{"slug a number", `{"company_id": 1, "slug": 7, "title": "t"}`},
		{"company missing", `{"slug": "NINJA", "title": "t"}`},
		{"company zero", `{"company_id": 0, "slug": "NINJA", "title": "t"}`},
		{"company a string", `{"company_id": "1", "slug": "NINJA", "title": "t"}`},
		{"company a fraction", `{"company_id": 1.5, "slug": "NINJA", "title": "t"}`},
		{"title empty", `{"company_id": 1, "slug": "NINJA", "title": ""}`},
		{"title too long", `{"company_id": 1, "slug": "NINJA", "title": "` + strings.Repeat("a", 256) + `"}`},
		{"unknown field", `{"company_id": 1, "slug": "NINJA", "title": "t", "color": "red"}`},
		{"not an object", `[1]`},
		{"no body", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.Do(t, "POST", "/v1/boards", tt.body)
			if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
				t.Fatalf("status %d %s, want 400 invalid_argument", r.Status, r.Body)
			}
		})
	}
}

func TestBoardSlugConflictsWithinACompanyOnly(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	createBoard(t, env, co, "NINJA")
	tests := []struct {
		company int64
		slug    string
		status  int
	}{
		{co, "NINJA", 409},
		{co, "ninja", 409}, // the same slug once upper-cased
		{newCompany(), "NINJA", 201},
		{co, "ROCK", 201},
	}
	for _, tt := range tests {
		r := env.Do(t, "POST", "/v1/boards", fmt.Sprintf(`{"company_id": %d, "slug": %q, "title": "t"}`, tt.company, tt.slug))
		if r.Status != tt.status {
			t.Errorf("board %s of company %d: %d %s, want %d", tt.slug, tt.company, r.Status, r.Body, tt.status)
		}
	}
}

func TestCreateTicketChecksTitleAndDescriptionInCharacters(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	b := createBoard(t, env, co, "NINJA")
	path := fmt.Sprintf("/v1/boards/%d/tickets", b.ID)
	tests := []struct {
		name, body string
		status     int
	}{
		{"title only", `{"title": "Stars miss"}`, 201},
		{"description of 3000 characters", `{"title": "t", "description": "` + strings.Repeat("ü", 3000) + `"}`, 201},
		{"title of 255 characters", `{"title": "` + strings.Repeat("ü", 255) + `"}`, 201},
		{"description of 3001 characters", `{"title": "t", "description": "` + strings.Repeat("a", 3001) + `"}`, 400},
		{"title of 256 characters", `{"title": "` + strings.Repeat("a", 256) + `"}`, 400},
		{"empty title", `{"title": ""}`, 400},
		{"blank title", `{"title": "  "}`, 400},
		{"no title", `{"description": "d"}`, 400},
		{"null description", `{"title": "t", "description": null}`, 400},
		{"unknown field", `{"title": "t", "priority": 1}`, 400},
		{"malformed JSON", `{"title": `, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.Do(t, "POST", path, tt.body)
			if r.Status != tt.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.status)
			}
		})
	}
	// Three tickets were created; refused requests took no number.
	if got := createTicket(t, env, b.ID, "next"); got.LocalID != 4 || got.Key != "NINJA-4" {
		t.Fatalf("next ticket = %+v, want NINJA-4", got)
	}
}

func TestTicketEndpointsRefuseBadIDs(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	b := createBoard(t, env, newCompany(), "NINJA")
	body := `{"title": "t"}`
	tests := []struct{ method, path, body string }{
		{"GET", "/v1/boards/0", ""},
		{"GET", "/v1/boards/-1", ""},
		{"GET", "/v1/boards/abc", ""},
		{"GET", "/v1/boards/1.5", ""},
		{"GET", "/v1/boards/9223372036854775808", ""},
		{"POST", "/v1/boards/0/tickets", body},
		{"GET", "/v1/boards/x/tickets", ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets/0", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets/seven", b.ID), ""},
		{"DELETE", fmt.Sprintf("/v1/boards/%d/tickets/-7", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets?after=-1", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets?after=x", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets?limit=0", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets?limit=1001", b.ID), ""},
		{"GET", "/v1/companies/0/tickets/NINJA-1", ""},
		{"GET", "/v1/companies/1/tickets/NINJA", ""},
		{"GET", "/v1/companies/1/tickets/NINJA-0", ""},
		{"GET", "/v1/companies/1/tickets/NIN_JA-1", ""},
	}
	for _, tt := range tests {
		r := env.Do(t, tt.method, tt.path, tt.body)
		if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
			t.Errorf("%s %s: %d %s, want 400 invalid_argument", tt.method, tt.path, r.Status, r.Body)
		}
	}
}

func TestTicketEndpointsAnswer404ForUnknownBoardsAndTickets(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	b := createBoard(t, env, co, "NINJA")
	createTicket(t, env, b.ID, "one")
	tests := []struct{ method, path, body string }{
		// No board of the shared service's has this id.
		{"GET", "/v1/boards/999999999", ""},
		{"POST", "/v1/boards/999999999/tickets", `{"title": "t"}`},
		{"GET", "/v1/boards/999999999/tickets", ""},
		{"GET", "/v1/boards/999999999/tickets/1", ""},
		{"DELETE", "/v1/boards/999999999/tickets/1", ""},
		{"GET", fmt.Sprintf("/v1/boards/%d/tickets/2", b.ID), ""},
		{"DELETE", fmt.Sprintf("/v1/boards/%d/tickets/2", b.ID), ""},
		{"GET", fmt.Sprintf("/v1/companies/%d/tickets/NINJA-2", co), ""},
		{"GET", fmt.Sprintf("/v1/companies/%d/tickets/ROCK-1", co), ""},
		{"GET", fmt.Sprintf("/v1/companies/%d/tickets/NINJA-1", newCompany()), ""},
	}
	for _, tt := range tests {
		r := env.Do(t, tt.method, tt.path, tt.body)
		if r.Status != 404 || r.ErrorCode() != "not_found" {
			t.Errorf("%s %s: %d %s, want 404 not_found", tt.method, tt.path, r.Status, r.Body)
		}
	}
}

func TestDeletedTicketsNumberStaysUsed(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	b := createBoard(t, env, newCompany(), "NINJA")
	for range 3 {
		createTicket(t, env, b.ID, "t")
	}
	path := fmt.Sprintf("/v1/boards/%d/tickets/3", b.ID)
	if r := env.Do(t, "DELETE", path, ""); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "GET", path, ""); r.Status != 404 {
		t.Fatalf("GET deleted ticket: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "DELETE", path, ""); r.Status != 404 {
		t.Fatalf("second DELETE: %d %s", r.Status, r.Body)
	}
	if got := createTicket(t, env, b.ID, "after the delete"); got.LocalID != 4 {
		t.Fatalf("ticket after deleting NINJA-3 = %s, want NINJA-4", got.Key)
	}
}

func TestTicketIsFoundByItsKeyInAnyCase(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	b := createBoard(t, env, co, "NINJA")
	var want ticketBody
	for i := 1; i <= 7; i++ {
		want = createTicket(t, env, b.ID, fmt.Sprintf("ticket %d", i))
	}
	for _, key := range []string{"NINJA-7", "ninja-7", "Ninja-7"} {
		r := env.Do(t, "GET", fmt.Sprintf("/v1/companies/%d/tickets/%s", co, key), "")
		var got ticketBody
		r.Decode(t, &got)
		if r.Status != 200 || got != want {
			t.Errorf("GET %s: %d %+v, want %+v", key, r.Status, got, want)
		}
	}
	r := env.Do(t, "GET", fmt.Sprintf("/v1/boards/%d/tickets/7", b.ID), "")
	var got ticketBody
	r.Decode(t, &got)
	if r.Status != 200 || got != want || got.Key != "NINJA-7" || got.Title != "ticket 7" {
		t.Fatalf("GET by number: %d %+v, want %+v", r.Status, got, want)
	}
}

func TestListTicketsPagesByNumber(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	co := newCompany()
	b := createBoard(t, env, co, "NINJA")
	other := createBoard(t, env, co, "ROCK")
	for i := 1; i <= 5; i++ {
		createTicket(t, env, b.ID, fmt.Sprintf("ticket %d", i))
	}
	createTicket(t, env, other.ID, "elsewhere")
	env.Do(t, "DELETE", fmt.Sprintf("/v1/boards/%d/tickets/2", b.ID), "")

	var keys []string
	query := "?limit=2"
	for pages := 0; ; pages++ {
		r := env.Do(t, "GET", fmt.Sprintf("/v1/boards/%d/tickets%s", b.ID, query), "")
		if r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		var page ticketPageBody
		r.Decode(t, &page)
		for _, tk := range page.Tickets {
			keys = append(keys, tk.Key)
		}
		if page.NextAfter == nil {
			if !strings.Contains(string(r.Body), `"next_after":null`) {
				t.Fatalf("last page %s does not say next_after null", r.Body)
			}
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		query = fmt.Sprintf("?limit=2&after=%d", *page.NextAfter)
	}
	if got, want := strings.Join(keys, " "), "NINJA-1 NINJA-3 NINJA-4 NINJA-5"; got != want {
		t.Fatalf("listed %s, want %s", got, want)
	}
	r := env.Do(t, "GET", fmt.Sprintf("/v1/boards/%d/tickets", other.ID), "")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"key":"ROCK-1"`) {
		t.Fatalf("default page of ROCK: %d %s", r.Status, r.Body)
	}
}

func TestBoardSequenceIsAReadOnlyReservedCounter(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	b := createBoard(t, env, 1, "NINJA")
	for range 3 {
		createTicket(t, env, b.ID, "t")
	}
	env.Do(t, "PUT", "/v1/counters/sales", `{"value": 5}`)
	path := "/v1/counters/" + url.PathEscape(fmt.Sprintf("_tickets/board/%d", b.ID))
	value := func() string {
		r := env.Do(t, "GET", path, "")
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		return string(r.Body)
	}
	if got := value(); !strings.Contains(got, `"value":3`) {
		t.Fatalf("sequence = %s, want value 3", got)
	}
	writes := []struct{ method, path, body string }{
		{"PUT", path, `{"value": 0}`},
		{"DELETE", path, ""},
		{"POST", path + "/increment", ""},
		{"POST", "/v1/counters/reset", `{"prefix": "_tickets/", "value": 0}`},
	}
	for _, w := range writes {
		if r := env.Do(t, w.method, w.path, w.body); r.Status != 403 || r.ErrorCode() != "permission_denied" {
			t.Errorf("%s %s: %d %s, want 403", w.method, w.path, r.Status, r.Body)
		}
	}
	if r := env.Do(t, "POST", "/v1/counters/reset", `{"all": true, "value": 0}`); r.Status != 200 || string(r.Body) != `{"reset":1}` {
		t.Fatalf("reset all: %d %s, want 200 and one counter reset", r.Status, r.Body)
	}
	if got := value(); !strings.Contains(got, `"value":3`) {
		t.Fatalf("sequence after the refused writes and a reset = %s, want value 3", got)
	}
	if got := createTicket(t, env, b.ID, "t"); got.Key != "NINJA-4" {
		t.Fatalf("next ticket = %s, want NINJA-4", got.Key)
	}
}

func TestTicketEndpointsNeedTheBearerToken(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	paths := []struct{ method, path string }{
		{"POST", "/v1/boards"},
		{"GET", "/v1/boards/1"},
		{"POST", "/v1/boards/1/tickets"},
		{"GET", "/v1/boards/1/tickets"},
		{"GET", "/v1/boards/1/tickets/1"},
		{"DELETE", "/v1/boards/1/tickets/1"},
		{"GET", "/v1/companies/1/tickets/NINJA-1"},
	}
	for _, p := range paths {
		if r := env.Do(t, p.method, p.path, ""); r.Status != 401 {
			t.Errorf("%s %s without a token: %d, want 401", p.method, p.path, r.Status)
		}
	}
	r := env.Do(t, "POST", "/v1/boards", `{"company_id": 1, "slug": "NINJA", "title": "t"}`, "Authorization: Bearer s3cret")
	if r.Status != 201 {
		t.Fatalf("with the token: %d %s", r.Status, r.Body)
	}
}

// A ticket that was not found is not remembered: it is found once created.
func TestTicketNotFoundIsFoundOnceCreated(t *testing.T) {
	t.Parallel()
	e := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	board := createBoard(t, e, 1, "ROCK").ID
	path := fmt.Sprintf("/v1/boards/%d/tickets/1", board)
	if got := e.Do(t, "GET", path, ""); got.Status != 404 {
		t.Fatalf("before: %d", got.Status)
	}
	createTicket(t, e, board, "a ticket")
	if got := e.Do(t, "GET", path, ""); got.Status != 200 {
		t.Fatalf("after create: %d %s", got.Status, got.Body)
	}
}

// Readers race a delete: no read that starts after the delete was answered
// returns the ticket.
func TestNoReadAfterAnAnsweredDeleteReturnsTheTicket(t *testing.T) {
	t.Parallel()
	e := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	board := createBoard(t, e, 1, "RACE").ID
	for round := 0; round < 10; round++ {
		n := createTicket(t, e, board, "a ticket").LocalID
		path := fmt.Sprintf("/v1/boards/%d/tickets/%d", board, n)
		var deletedAt atomic.Int64 // unix nanos of the DELETE's answer; 0 before
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now().UnixNano()
					got, err := e.TryDo("GET", path, "")
					if err != nil {
						t.Error(err)
						return
					}
					if d := deletedAt.Load(); d != 0 && start > d && got.Status != 404 {
						t.Errorf("round %d: a read that began after the delete was answered got %d", round, got.Status)
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		if got := e.Do(t, "DELETE", path, ""); got.Status != 204 {
			t.Fatalf("DELETE: %d", got.Status)
		}
		deletedAt.Store(time.Now().UnixNano())
		time.Sleep(30 * time.Millisecond)
		close(stop)
		wg.Wait()
	}
}
