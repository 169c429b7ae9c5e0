package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// keyed is a key made through the API: its id and secret.
type keyed struct {
	ID     int64  `json:"id"`
	Secret string `json:"secret"`
}

// createKey makes a key as the admin (a loopback client of a service
// without COUNTERS_API_TOKEN, unless headers say otherwise).
func createKey(tb testing.TB, env *apptest.Env, body string, headers ...string) keyed {
	tb.Helper()
	r := env.Do(tb, "POST", "/v1/keys", body, headers...)
	if r.Status != 201 {
		tb.Fatalf("POST /v1/keys %s: %d %s", body, r.Status, r.Body)
	}
	var k keyed
	r.Decode(tb, &k)
	return k
}

func bearerOf(secret string) string { return "Authorization: Bearer " + secret }

// unknownSecret has the form of a secret that no key has.
func unknownSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "ck_" + base64.RawURLEncoding.EncodeToString(b)
}

// remoteEnv serves env also on a non-loopback address of this machine and
// returns env as a client on another address sees it.
func remoteEnv(t *testing.T, env *apptest.Env) *apptest.Env {
	t.Helper()
	remote := testenv.NewRemote(t)
	ln, err := net.Listen("tcp", remote.HostAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	go env.App.Listener(ln) // closed by env's shutdown with the first listener
	far := *env
	far.URL, far.Client = "http://"+ln.Addr().String(), remote.Client
	return &far
}

// snapshot is everything a request could change, to prove a refused one
// changed nothing.
type snapshot struct {
	Counters          []string
	Boards, Tickets   int
	Keys, Idempotency int
}

func takeSnapshot(tb testing.TB, env *apptest.Env) snapshot {
	tb.Helper()
	var s snapshot
	rows, err := env.DB.Query("SELECT CONCAT(name, '=', value) FROM counter ORDER BY name")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		rows.Scan(&c)
		s.Counters = append(s.Counters, c)
	}
	for q, dst := range map[string]*int{
		"SELECT COUNT(*) FROM board": &s.Boards, "SELECT COUNT(*) FROM ticket": &s.Tickets,
		"SELECT COUNT(*) FROM api_key WHERE revoked_at IS NULL": &s.Keys,
		"SELECT COUNT(*) FROM idempotency_record":               &s.Idempotency,
	} {
		if err := env.DB.QueryRow(q).Scan(dst); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// fixture is the state each cell of the matrix starts from, made by the
// admin: counters in and out of the keys' prefixes, a ticket on a board of
// company 7, and a spare key to read and revoke. The ticket and the key
// are made when the cell's request names them, before its snapshot: the
// cells of 21 endpoints of 26 need neither, and made both, half of each
// cell's writes, for nothing.
type fixture struct {
	board            int64
	seq              int
	ticket, spareKey func() int64
}

// The keys of the matrix, by who holds them.
type principals struct {
	admin, read, write, outside, revoked, expired string
}

func makePrincipals(t *testing.T, env *apptest.Env) principals {
	t.Helper()
	p := principals{
		admin:   createKey(t, env, `{"name": "ops", "scopes": ["admin"]}`).Secret,
		read:    createKey(t, env, `{"name": "shop reader", "scopes": ["read"], "prefixes": ["shop/"], "companies": [7]}`).Secret,
		write:   createKey(t, env, `{"name": "shop till", "scopes": ["write"], "prefixes": ["shop/"], "companies": [7]}`).Secret,
		outside: createKey(t, env, `{"name": "other app", "scopes": ["read", "write"], "prefixes": ["other/"], "companies": [8]}`).Secret,
	}
	revoked := createKey(t, env, `{"name": "gone", "scopes": ["read", "write"], "prefixes": [""], "companies": [7]}`)
	if r := env.Do(t, "DELETE", fmt.Sprintf("/v1/keys/%d", revoked.ID), ""); r.Status != 204 {
		t.Fatalf("revoking: %d %s", r.Status, r.Body)
	}
	p.revoked = revoked.Secret
	expired := createKey(t, env, `{"name": "old", "scopes": ["read", "write"], "prefixes": [""], "companies": [7], "expires_at": "2999-01-01T00:00:00Z"}`)
	// Not yet used, so no process believes it yet: expire it in the store.
	if _, err := env.DB.Exec("UPDATE api_key SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE id = ?", expired.ID); err != nil {
		t.Fatal(err)
	}
	p.expired = expired.Secret
	return p
}

// Each endpoint, as each kind of caller: the status, and nothing changed
// where refused. The service runs without COUNTERS_API_TOKEN, as
// scripts/run starts it: loopback clients are the admin, a client on
// another address is refused unless it shows a key.
func TestEveryEndpointAnswersEachCallerByItsKey(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	far := remoteEnv(t, env)
	p := makePrincipals(t, env)

	var board struct{ ID int64 }
	r := env.Do(t, "POST", "/v1/boards", `{"company_id": 7, "slug": "SHOP", "title": "Shop"}`)
	r.Decode(t, &board)
	seq := 0
	setup := func(t *testing.T) fixture {
		t.Helper()
		seq++
		// Both counters at 5 in one transaction (two PUTs were two).
		seed := `{"name": "shop/a", "value": 5}` + "\n" + `{"name": "other/b", "value": 5}` + "\n"
		if r := env.Do(t, "POST", "/v1/import?atomic=true&mode=overwrite", seed); r.Status != 200 {
			t.Fatalf("seeding: %d %s", r.Status, r.Body)
		}
		var ticket, spareKey int64
		return fixture{board: board.ID, seq: seq,
			ticket: func() int64 {
				if ticket == 0 {
					var tk struct {
						LocalID int64 `json:"local_id"`
					}
					env.Do(t, "POST", fmt.Sprintf("/v1/boards/%d/tickets", board.ID), `{"title": "t"}`).Decode(t, &tk)
					ticket = tk.LocalID
				}
				return ticket
			},
			spareKey: func() int64 {
				if spareKey == 0 {
					spareKey = createKey(t, env, `{"name": "spare", "scopes": ["read"]}`).ID
				}
				return spareKey
			},
		}
	}

	type request struct{ method, path, body string }
	// want: admin key, read key in scope, write key in scope, a read+write
	// key of other prefixes and companies. Keys that are revoked, expired or
	// unknown get 401, as does no key from another address; no key from
	// loopback is the admin. Public endpoints answer everybody.
	endpoints := []struct {
		name   string
		req    func(f fixture) request
		want   [4]int
		public bool
	}{
		{"increment", func(f fixture) request { return request{"POST", "/v1/counters/shop%2Fa/increment", ""} }, [4]int{200, 403, 200, 403}, false},
		{"get", func(f fixture) request { return request{"GET", "/v1/counters/shop%2Fa", ""} }, [4]int{200, 200, 403, 403}, false},
		{"set", func(f fixture) request { return request{"PUT", "/v1/counters/shop%2Fa", `{"value": 1}`} }, [4]int{200, 403, 200, 403}, false},
		{"delete", func(f fixture) request { return request{"DELETE", "/v1/counters/shop%2Fa", ""} }, [4]int{204, 403, 204, 403}, false},
		{"list prefix", func(f fixture) request { return request{"GET", "/v1/counters?prefix=shop/", ""} }, [4]int{200, 200, 403, 403}, false},
		{"history", func(f fixture) request { return request{"GET", "/v1/counters/shop%2Fa/history", ""} }, [4]int{200, 200, 403, 403}, false},
		{"history of a prefix", func(f fixture) request { return request{"GET", "/v1/history?prefix=shop/", ""} }, [4]int{200, 200, 403, 403}, false},
		{"export", func(f fixture) request { return request{"GET", "/v1/export?prefix=shop/", ""} }, [4]int{200, 200, 403, 403}, false},
		{"atomic import", func(f fixture) request {
			return request{"POST", "/v1/import?atomic=true&mode=overwrite", `{"name": "shop/a", "value": 5}` + "\n"}
		}, [4]int{200, 403, 200, 403}, false},
		{"list own prefix", func(f fixture) request { return request{"GET", "/v1/counters", ""} }, [4]int{200, 200, 403, 200}, false},
		{"reset prefix", func(f fixture) request {
			return request{"POST", "/v1/counters/reset", `{"prefix": "shop/", "value": 0}`}
		}, [4]int{200, 403, 200, 403}, false},
		{"reset all", func(f fixture) request { return request{"POST", "/v1/counters/reset", `{"all": true, "value": 0}`} }, [4]int{200, 403, 403, 403}, false},
		{"batch", func(f fixture) request {
			return request{"POST", "/v1/counters/batch", `{"increments": [{"name": "shop/a", "by": 1}, {"name": "shop/c", "by": 2}]}`}
		}, [4]int{200, 403, 200, 403}, false},
		{"idempotent increment", func(f fixture) request {
			return request{"POST", "/v1/counters/shop%2Fa/increment?by=3", ""}
		}, [4]int{200, 403, 200, 403}, false},
		{"create board", func(f fixture) request {
			return request{"POST", "/v1/boards", fmt.Sprintf(`{"company_id": 7, "slug": "B%d", "title": "t"}`, f.seq)}
		}, [4]int{201, 403, 201, 403}, false},
		{"get board", func(f fixture) request { return request{"GET", fmt.Sprintf("/v1/boards/%d", f.board), ""} }, [4]int{200, 200, 403, 403}, false},
		{"create ticket", func(f fixture) request {
			return request{"POST", fmt.Sprintf("/v1/boards/%d/tickets", f.board), `{"title": "t"}`}
		}, [4]int{201, 403, 201, 403}, false},
		{"list tickets", func(f fixture) request { return request{"GET", fmt.Sprintf("/v1/boards/%d/tickets", f.board), ""} }, [4]int{200, 200, 403, 403}, false},
		{"get ticket", func(f fixture) request {
			return request{"GET", fmt.Sprintf("/v1/boards/%d/tickets/%d", f.board, f.ticket()), ""}
		}, [4]int{200, 200, 403, 403}, false},
		{"delete ticket", func(f fixture) request {
			return request{"DELETE", fmt.Sprintf("/v1/boards/%d/tickets/%d", f.board, f.ticket()), ""}
		}, [4]int{204, 403, 204, 403}, false},
		{"ticket by key", func(f fixture) request {
			return request{"GET", fmt.Sprintf("/v1/companies/7/tickets/SHOP-%d", f.ticket()), ""}
		}, [4]int{200, 200, 403, 403}, false},
		{"create key", func(f fixture) request {
			return request{"POST", "/v1/keys", `{"name": "x", "scopes": ["read"], "prefixes": ["shop/"]}`}
		}, [4]int{201, 403, 403, 403}, false},
		{"list keys", func(f fixture) request { return request{"GET", "/v1/keys", ""} }, [4]int{200, 403, 403, 403}, false},
		{"get key", func(f fixture) request { return request{"GET", fmt.Sprintf("/v1/keys/%d", f.spareKey()), ""} }, [4]int{200, 403, 403, 403}, false},
		{"revoke key", func(f fixture) request { return request{"DELETE", fmt.Sprintf("/v1/keys/%d", f.spareKey()), ""} }, [4]int{204, 403, 403, 403}, false},
		{"hit", func(f fixture) request { return request{"GET", "/v1/hits/hits%2Fm", ""} }, [4]int{200, 200, 200, 200}, true},
	}
	callers := []struct {
		name    string
		via     *apptest.Env
		headers []string
		want    func(w [4]int, public bool) int
	}{
		{"admin key", env, []string{bearerOf(p.admin)}, func(w [4]int, _ bool) int { return w[0] }},
		{"read key in scope", env, []string{bearerOf(p.read)}, func(w [4]int, _ bool) int { return w[1] }},
		{"write key in scope", env, []string{bearerOf(p.write)}, func(w [4]int, _ bool) int { return w[2] }},
		{"write key out of scope", env, []string{bearerOf(p.outside)}, func(w [4]int, _ bool) int { return w[3] }},
		{"write key in scope from another address", far, []string{bearerOf(p.write)}, func(w [4]int, _ bool) int { return w[2] }},
		{"revoked key", env, []string{bearerOf(p.revoked)}, refusedUnlessPublic},
		{"expired key", env, []string{bearerOf(p.expired)}, refusedUnlessPublic},
		{"unknown key", env, []string{bearerOf(unknownSecret())}, refusedUnlessPublic},
		{"no key from loopback", env, nil, func(w [4]int, _ bool) int { return w[0] }},
		{"no key from another address", far, nil, refusedUnlessPublic},
	}
	for _, ep := range endpoints {
		for _, c := range callers {
			t.Run(ep.name+"/"+c.name, func(t *testing.T) {
				f := setup(t)
				req := ep.req(f)
				headers := c.headers
				if ep.name == "idempotent increment" {
					headers = append(headers[:len(headers):len(headers)], fmt.Sprintf("Idempotency-Key: k%d", f.seq))
				}
				before := takeSnapshot(t, env)
				r := c.via.Do(t, req.method, req.path, req.body, headers...)
				if want := c.want(ep.want, ep.public); r.Status != want {
					t.Fatalf("%s %s: %d %s, want %d", req.method, req.path, r.Status, r.Body, want)
				}
				if r.Status >= 400 && !reflect.DeepEqual(takeSnapshot(t, env), before) {
					t.Fatalf("%s %s was refused (%d) but changed the data", req.method, req.path, r.Status)
				}
			})
		}
	}
}

func refusedUnlessPublic(_ [4]int, public bool) int {
	if public {
		return 200
	}
	return 401
}

// statusCase is one caller of GET /v1/counters and the status it gets.
type statusCase struct {
	name    string
	via     *apptest.Env
	headers []string
	want    int
}

// listAs lists the counters as each case's caller, and checks every answer
// with check too.
func listAs(t *testing.T, cases []statusCase, check func(*testing.T, apptest.Response)) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.via.Do(t, "GET", "/v1/counters", "", c.headers...)
			if r.Status != c.want {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, c.want)
			}
			check(t, r)
		})
	}
}

// A client on another address of a service without COUNTERS_API_TOKEN is
// told which variable opens the API; one on loopback behind a proxy that is
// not trusted is not taken for a local client.
func TestWithoutTokenOnlyLocalClientsAreServed(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	far := remoteEnv(t, env)
	listAs(t, []statusCase{
		{"loopback", env, nil, 200},
		{"loopback with an empty bearer", env, []string{"Authorization: Bearer "}, 200},
		{"another address", far, nil, 401},
		{"loopback through an untrusted proxy", env, []string{"X-Forwarded-For: 203.0.113.9"}, 401},
		{"loopback with a Forwarded header", env, []string{"Forwarded: for=203.0.113.9"}, 401},
		{"loopback with an X-Real-IP header", env, []string{"X-Real-IP: 203.0.113.9"}, 401},
	}, func(t *testing.T, r apptest.Response) {
		if r.Status == 401 && (r.ErrorCode() != "unauthenticated" || !strings.Contains(string(r.Body), "COUNTERS_API_TOKEN")) {
			t.Fatalf("the refusal must name COUNTERS_API_TOKEN: %s", r.Body)
		}
	})
}

// With COUNTERS_API_TOKEN set, it is the admin from anywhere, and nobody
// without a token is served, loopback included.
func TestWithTokenNobodyIsServedWithoutOne(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	far := remoteEnv(t, env)
	listAs(t, []statusCase{
		{"loopback without token", env, nil, 401},
		{"another address without token", far, nil, 401},
		{"another address with the token", far, []string{"Authorization: Bearer s3cret"}, 200},
		{"lower-case scheme", env, []string{"Authorization: bearer s3cret"}, 200},
		{"another scheme", env, []string{"Authorization: Basic s3cret"}, 401},
	}, func(*testing.T, apptest.Response) {})
}

// The same Idempotency-Key from two API keys names two requests: each is
// applied, and neither is answered with the other's recorded value. A
// repeat from one key replays its own answer.
func TestIdempotencyKeysBelongToTheAPIKeyThatSentThem(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	shop := `{"name": "till %d", "scopes": ["write"], "prefixes": ["shop/"]}`
	a, b := createKey(t, env, fmt.Sprintf(shop, 1)).Secret, createKey(t, env, fmt.Sprintf(shop, 2)).Secret
	steps := []struct {
		name         string
		headers      []string
		by           string
		wantValue    int64
		wantReplayed bool
	}{
		{"first key", []string{bearerOf(a)}, "5", 5, false},
		{"second key, same Idempotency-Key", []string{bearerOf(b)}, "5", 10, false},
		{"admin, same Idempotency-Key", nil, "5", 15, false},
		{"first key again", []string{bearerOf(a)}, "5", 5, true},
		{"second key again", []string{bearerOf(b)}, "5", 10, true},
		{"second key, same Idempotency-Key, another request", []string{bearerOf(b)}, "7", 0, false},
	}
	for _, s := range steps {
		r := env.Do(t, "POST", "/v1/counters/shop%2Fsales/increment?by="+s.by, "", append(s.headers, "Idempotency-Key: order-1")...)
		if s.wantValue == 0 {
			if r.Status != 409 {
				t.Fatalf("%s: %d %s, want 409", s.name, r.Status, r.Body)
			}
			continue
		}
		var got struct{ Value int64 }
		r.Decode(t, &got)
		if r.Status != 200 || got.Value != s.wantValue || (r.Header.Get("Idempotent-Replayed") == "true") != s.wantReplayed {
			t.Fatalf("%s: %d %s replayed=%q, want value %d replayed %v", s.name, r.Status, r.Body,
				r.Header.Get("Idempotent-Replayed"), s.wantValue, s.wantReplayed)
		}
	}
}

// A key's prefixes bound every name a request touches, and what a listing
// shows.
func TestKeyPrefixesBoundNamesListsAndBatches(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	for _, name := range []string{"shop/a", "shopping", "other/b"} {
		env.Do(t, "PUT", "/v1/counters/"+strings.ReplaceAll(name, "/", "%2F"), `{"value": 1}`)
	}
	env.Do(t, "POST", "/v1/boards", `{"company_id": 7, "slug": "RES", "title": "makes a reserved counter"}`)
	env.Do(t, "POST", "/v1/boards/1/tickets", `{"title": "t"}`)
	shop := bearerOf(createKey(t, env, `{"name": "shop", "scopes": ["read", "write"], "prefixes": ["shop/"]}`).Secret)
	every := bearerOf(createKey(t, env, `{"name": "every", "scopes": ["read"], "prefixes": [""]}`).Secret)
	cases := []struct {
		name, method, path, body, auth string
		want                           int
		listed                         []string // for 200 listings: the names shown
	}{
		{"a list without prefix lists the key's one prefix", "GET", "/v1/counters", "", shop, 200, []string{"shop/a"}},
		{"a prefix inside the key's", "GET", "/v1/counters?prefix=shop/a", "", shop, 200, []string{"shop/a"}},
		{"a prefix wider than the key's", "GET", "/v1/counters?prefix=shop", "", shop, 403, nil},
		{"the \"\" prefix lists every name but the reserved ones", "GET", "/v1/counters", "", every, 200, []string{"other/b", "shop/a", "shopping"}},
		{"the \"\" prefix does not reach reserved names", "GET", "/v1/counters?prefix=_", "", every, 403, nil},
		{"the \"\" prefix does not read a reserved name", "GET", "/v1/counters/_tickets%2Fboard%2F1", "", every, 403, nil},
		{"a name beside the prefix", "GET", "/v1/counters/shopping", "", shop, 403, nil},
		{"a batch with one item outside", "POST", "/v1/counters/batch", `{"increments": [{"name": "shop/a", "by": 1}, {"name": "other/b", "by": 1}]}`, shop, 403, nil},
		{"a reset of a prefix outside", "POST", "/v1/counters/reset", `{"prefix": "other/", "value": 0}`, shop, 403, nil},
		{"a reset without prefix", "POST", "/v1/counters/reset", `{"value": 0}`, shop, 403, nil},
		{"reserved names stay read-only for the admin", "PUT", "/v1/counters/_tickets%2Fboard%2F1", `{"value": 0}`, "", 403, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var headers []string
			if c.auth != "" {
				headers = []string{c.auth}
			}
			before := takeSnapshot(t, env)
			r := env.Do(t, c.method, c.path, c.body, headers...)
			if r.Status != c.want {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, c.want)
			}
			if r.Status == 403 && !reflect.DeepEqual(takeSnapshot(t, env), before) {
				t.Fatal("refused, but the data changed")
			}
			if c.listed == nil {
				return
			}
			var page struct{ Counters []struct{ Name string } }
			r.Decode(t, &page)
			var names []string
			for _, ctr := range page.Counters {
				names = append(names, ctr.Name)
			}
			if !reflect.DeepEqual(names, c.listed) {
				t.Fatalf("listed %q, want %q", names, c.listed)
			}
		})
	}
	r := env.Do(t, "POST", "/v1/counters/batch", `{"increments": [{"name": "shop/a", "by": 1}, {"name": "other/b", "by": 1}]}`, shop)
	if !strings.Contains(string(r.Body), `increments[1] (\"other/b\")`) {
		t.Errorf("a refused batch names the item: %s", r.Body)
	}
}

// A new key is shown with its secret once; reads show it without. Bad
// requests are 400 and make no key.
func TestKeysAreCreatedOnceWithASecretAndValidated(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	r := env.Do(t, "POST", "/v1/keys", `{"name": "shop A", "scopes": ["read", "write", "read"], "prefixes": ["shopA/"], "companies": [7], "expires_at": "2999-01-31T00:00:00Z"}`)
	var created map[string]any
	r.Decode(t, &created)
	secret, _ := created["secret"].(string)
	if r.Status != 201 || !regexp.MustCompile(`^ck_[A-Za-z0-9_-]{43}$`).MatchString(secret) || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created: %d %s %q", r.Status, r.Body, r.Header.Get("Cache-Control"))
	}
	delete(created, "secret")
	delete(created, "created_at")
	want := map[string]any{"id": 1.0, "name": "shop A", "scopes": []any{"read", "write"}, "prefixes": []any{"shopA/"},
		"companies": []any{7.0}, "expires_at": "2999-01-31T00:00:00Z", "last_used_at": nil}
	if !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	// A name's limit is 255 characters, as the column counts them, not bytes.
	long := strings.Repeat("é", 255)
	if r := env.Do(t, "POST", "/v1/keys", `{"name": "`+long+`", "scopes": ["read"]}`); r.Status != 201 || !strings.Contains(string(r.Body), long) {
		t.Fatalf("a name of 255 two-byte characters: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/keys", "/v1/keys/1"} {
		if r := env.Do(t, "GET", path, ""); r.Status != 200 || strings.Contains(string(r.Body), "secret") {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}

	bad := []struct{ name, body string }{
		{"no name", `{"scopes": ["read"]}`},
		{"no scopes", `{"name": "x", "scopes": []}`},
		{"unknown scope", `{"name": "x", "scopes": ["root"]}`},
		{"scopes not a list", `{"name": "x", "scopes": "read"}`},
		{"company not positive", `{"name": "x", "scopes": ["read"], "companies": [0]}`},
		{"company not an integer", `{"name": "x", "scopes": ["read"], "companies": [1.5]}`},
		{"prefix with a control character", `{"name": "x", "scopes": ["read"], "prefixes": ["a\u0001"]}`},
		{"expiry in the past", `{"name": "x", "scopes": ["read"], "expires_at": "2000-01-01T00:00:00Z"}`},
		{"expiry not a time", `{"name": "x", "scopes": ["read"], "expires_at": "tomorrow"}`},
		{"unknown field", `{"name": "x", "scopes": ["read"], "secret": "ck_mine"}`},
		{"a name of 256 characters", `{"name": "` + strings.Repeat("é", 256) + `", "scopes": ["read"]}`},
		{"a name with a control character", `{"name": "x\u0007", "scopes": ["read"]}`},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			before := takeSnapshot(t, env)
			if r := env.Do(t, "POST", "/v1/keys", b.body); r.Status != 400 || r.ErrorCode() != "invalid_argument" {
				t.Fatalf("%d %s, want 400", r.Status, r.Body)
			}
			if !reflect.DeepEqual(takeSnapshot(t, env), before) {
				t.Fatal("a refused key was stored")
			}
		})
	}
}

// last_used_at is kept off the request path: it shows a key's use once
// the service has written its usage, which it does once a minute.
func TestLastUsedIsWrittenApartFromRequests(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	k := createKey(t, env, `{"name": "shop", "scopes": ["read"], "prefixes": ["shop/"]}`)
	lastUsed := func() any {
		var got map[string]any
		env.Do(t, "GET", fmt.Sprintf("/v1/keys/%d", k.ID), "").Decode(t, &got)
		return got["last_used_at"]
	}
	env.Do(t, "GET", "/v1/counters?prefix=shop/", "", bearerOf(k.Secret))
	if got := lastUsed(); got != nil {
		t.Fatalf("last_used_at %v before the usage was written", got)
	}
	env.Keys.Touch(context.Background())
	if got, _ := lastUsed().(string); got == "" {
		t.Fatal("last_used_at is still null after the usage was written")
	}
}

// A key in constant use by another process, which believes it without
// asking MySQL for a while, is refused there within a second of its
// revocation: no request that began later is served.
func TestBusyKeyIsRefusedEverywhereWithinASecondOfItsRevocation(t *testing.T) {
	t.Parallel()
	a := apptest.New(t)
	b := apptest.NewWithDSN(t, a.DSN)
	k := createKey(t, a, `{"name": "till", "scopes": ["write"], "prefixes": ["shop/"]}`)
	revoked := make(chan time.Time, 1)
	var revoking atomic.Bool
	go func() {
		time.Sleep(300 * time.Millisecond) // while b is busy with the key
		revoking.Store(true)
		if r, err := a.TryDo("DELETE", fmt.Sprintf("/v1/keys/%d", k.ID), ""); err != nil || r.Status != 204 {
			t.Errorf("revoking: %v %d", err, r.Status)
		}
		revoked <- time.Now()
	}()
	var at time.Time
	for {
		began := time.Now()
		r := b.Do(t, "POST", "/v1/counters/shop%2Fsales/increment", "", bearerOf(k.Secret))
		select {
		case at = <-revoked:
		default:
		}
		switch {
		case r.Status == 401:
			if !revoking.Load() {
				t.Fatal("refused before the revocation was sent")
			}
			return
		case r.Status != 200:
			t.Fatalf("%d %s", r.Status, r.Body)
		case !at.IsZero() && began.Sub(at) > time.Second:
			t.Fatalf("a request that began %v after the revocation was served", began.Sub(at))
		}
	}
}
