package keys_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// memStore keeps keys in memory, as storage's KeyStore keeps them in
// MySQL; the tests of that store are in storage/ and app/.
type memStore struct {
	mu      sync.Mutex
	byID    map[int64]*keys.Key
	byHash  map[[32]byte]int64
	touched map[int64]time.Time
	lookups int
	fail    error // every ByHash and Touch fails with it
}

func newMemStore() *memStore {
	return &memStore{byID: map[int64]*keys.Key{}, byHash: map[[32]byte]int64{}, touched: map[int64]time.Time{}}
}

func (s *memStore) Create(_ context.Context, k *keys.Key, hash [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.ID = int64(len(s.byID) + 1)
	c := *k
	s.byID[k.ID], s.byHash[hash] = &c, k.ID
	return nil
}

func (s *memStore) ByHash(_ context.Context, hash [32]byte) (*keys.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	if s.fail != nil {
		return nil, s.fail
	}
	id, ok := s.byHash[hash]
	if !ok {
		return nil, counters.Errorf(counters.ENOTFOUND, "No such API key.")
	}
	c := *s.byID[id]
	return &c, nil
}

func (s *memStore) Get(_ context.Context, id int64) (*keys.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.byID[id]
	if !ok || k.RevokedAt != nil {
		return nil, counters.Errorf(counters.ENOTFOUND, "No such API key.")
	}
	c := *k
	return &c, nil
}

func (s *memStore) List(context.Context) ([]keys.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []keys.Key
	for id := int64(1); id <= int64(len(s.byID)); id++ {
		if k := s.byID[id]; k.RevokedAt == nil {
			out = append(out, *k)
		}
	}
	return out, nil
}

func (s *memStore) Revoke(_ context.Context, id int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.byID[id]
	if !ok || k.RevokedAt != nil {
		return counters.Errorf(counters.ENOTFOUND, "No such API key.")
	}
	k.RevokedAt = &at
	return nil
}

func (s *memStore) Touch(_ context.Context, ids []int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, id := range ids {
		s.touched[id] = at
	}
	return nil
}

var admin = keys.NewContext(context.Background(), keys.Admin())

func create(t *testing.T, svc *keys.Service, req keys.CreateRequest) (*keys.Key, string) {
	t.Helper()
	k, secret, err := svc.Create(admin, req)
	if err != nil {
		t.Fatal(err)
	}
	return k, secret
}

func TestAuthenticateAnswersEachKindOfCredentials(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := now
	store := newMemStore()
	svc := keys.New(store, keys.Options{AdminToken: "tok", Now: func() time.Time { return clock }})
	soon := now.Add(time.Hour)
	_, live := create(t, svc, keys.CreateRequest{Name: "live", Scopes: []keys.Scope{keys.ScopeRead}, Prefixes: []string{"shop/"}})
	_, expiring := create(t, svc, keys.CreateRequest{Name: "expiring", Scopes: []keys.Scope{keys.ScopeRead}, ExpiresAt: &soon})
	revokedKey, revoked := create(t, svc, keys.CreateRequest{Name: "revoked", Scopes: []keys.Scope{keys.ScopeRead}})
	if err := svc.Revoke(admin, revokedKey.ID); err != nil {
		t.Fatal(err)
	}
	clock = soon // the expiring key has just expired

	open := keys.New(newMemStore(), keys.Options{}) // no admin token
	tests := []struct {
		name      string
		svc       *keys.Service
		c         keys.Credentials
		wantAdmin bool
		wantErr   string // a word of the message; "" for no error
	}{
		{"the admin token", svc, keys.Credentials{Bearer: "tok"}, true, ""},
		{"a live key", svc, keys.Credentials{Bearer: live}, false, ""},
		{"no bearer where a token is set", svc, keys.Credentials{Local: true}, false, "bearer token is required"},
		{"another scheme", svc, keys.Credentials{OtherScheme: true, Local: true}, false, "Bearer <token>"},
		{"a wrong token", svc, keys.Credentials{Bearer: "toke"}, false, "neither"},
		{"a made-up key", svc, keys.Credentials{Bearer: live[:len(live)-1] + "x"}, false, "neither"},
		{"a revoked key", svc, keys.Credentials{Bearer: revoked}, false, "revoked"},
		{"an expired key", svc, keys.Credentials{Bearer: expiring}, false, "expired"},
		{"a local client without a token set", open, keys.Credentials{Local: true}, true, ""},
		{"a remote client without a token set", open, keys.Credentials{}, false, "COUNTERS_API_TOKEN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.svc.Authenticate(context.Background(), tc.c)
			if tc.wantErr == "" {
				if err != nil || p == nil || p.IsAdmin() != tc.wantAdmin {
					t.Fatalf("Authenticate = %v, %v; want a principal, admin %v", p, err, tc.wantAdmin)
				}
				return
			}
			if counters.ErrorCode(err) != counters.EUNAUTHENTICATED || !strings.Contains(counters.ErrorMessage(err), tc.wantErr) {
				t.Fatalf("Authenticate = %v, %v; want unauthenticated saying %q", p, err, tc.wantErr)
			}
		})
	}
}

// A revocation by this process is refused at once, not after Recheck;
// a key is looked up once while believed.
func TestARevokedKeyIsRefusedAtOnceAndAKnownOneIsNotLookedUpAgain(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{Recheck: time.Hour, MaxStale: time.Hour})
	k, secret := create(t, svc, keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeWrite}, Prefixes: []string{"a/"}})
	for range 3 {
		if _, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret}); err != nil {
			t.Fatal(err)
		}
	}
	if store.lookups != 1 {
		t.Errorf("%d lookups for three requests within Recheck, want 1", store.lookups)
	}
	if err := svc.Revoke(admin, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret}); counters.ErrorCode(err) != counters.EUNAUTHENTICATED {
		t.Fatalf("after the revocation: %v, want unauthenticated", err)
	}
	if err := svc.Revoke(admin, k.ID); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("revoking again: %v, want not found", err)
	}
	if list, _ := svc.List(admin); len(list) != 0 {
		t.Errorf("List shows %d keys after the only one was revoked", len(list))
	}
	if _, err := svc.Get(admin, k.ID); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Errorf("Get of the revoked key: %v, want not found", err)
	}
}

func TestALookupThatFailsIsUnavailableNotUnknown(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{})
	_, secret := create(t, svc, keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead}})
	store.fail = counters.Errorf(counters.EUNAVAILABLE, "MySQL is down.")
	if _, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret}); counters.ErrorCode(err) != counters.EUNAVAILABLE {
		t.Fatalf("Authenticate with the store down: %v, want unavailable", err)
	}
}

// Touch writes the keys used since the last Touch once, and keeps them
// for the next when the write fails.
func TestTouchWritesTheKeysUsedSinceAndKeepsThemOnFailure(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	store := newMemStore()
	svc := keys.New(store, keys.Options{Now: func() time.Time { return at }})
	used, secret := create(t, svc, keys.CreateRequest{Name: "used", Scopes: []keys.Scope{keys.ScopeRead}})
	unused, _ := create(t, svc, keys.CreateRequest{Name: "unused", Scopes: []keys.Scope{keys.ScopeRead}})
	if _, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret}); err != nil {
		t.Fatal(err)
	}
	store.fail = errors.New("down")
	svc.Touch(context.Background())
	if len(store.touched) != 0 {
		t.Fatalf("touched %v while the store failed", store.touched)
	}
	store.fail = nil
	svc.Touch(context.Background())
	if got, ok := store.touched[used.ID]; !ok || !got.Equal(at) {
		t.Errorf("the used key was touched at %v (%v), want %v: the failed round's usage was lost", got, ok, at)
	}
	if _, ok := store.touched[unused.ID]; ok {
		t.Error("the unused key was touched")
	}
	clear(store.touched)
	svc.Touch(context.Background())
	if len(store.touched) != 0 {
		t.Errorf("a Touch with no use since touched %v", store.touched)
	}
}

func TestCreateRequestsAreValidated(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	past := now.Add(-time.Second)
	future := now.Add(time.Second)
	read := []keys.Scope{keys.ScopeRead}
	tests := []struct {
		name string
		req  keys.CreateRequest
		ok   bool
	}{
		{"a named read key", keys.CreateRequest{Name: "k", Scopes: read}, true},
		{"a name of 255 characters", keys.CreateRequest{Name: strings.Repeat("é", keys.MaxNameLen), Scopes: read}, true},
		{"a name of 256 characters", keys.CreateRequest{Name: strings.Repeat("é", keys.MaxNameLen+1), Scopes: read}, false},
		{"no name", keys.CreateRequest{Scopes: read}, false},
		{"a control character", keys.CreateRequest{Name: "a\nb", Scopes: read}, false},
		{"invalid UTF-8", keys.CreateRequest{Name: "\xff", Scopes: read}, false},
		{"no scope", keys.CreateRequest{Name: "k"}, false},
		{"an unknown scope", keys.CreateRequest{Name: "k", Scopes: []keys.Scope{"root"}}, false},
		{"the \"\" prefix", keys.CreateRequest{Name: "k", Scopes: read, Prefixes: []string{""}}, true},
		{"a bad prefix", keys.CreateRequest{Name: "k", Scopes: read, Prefixes: []string{"a\x00"}}, false},
		{"too many prefixes", keys.CreateRequest{Name: "k", Scopes: read, Prefixes: make([]string, keys.MaxPrefixes+1)}, false},
		{"a company of 0", keys.CreateRequest{Name: "k", Scopes: read, Companies: []int64{0}}, false},
		{"too many companies", keys.CreateRequest{Name: "k", Scopes: read, Companies: make([]int64, keys.MaxCompanies+1)}, false},
		{"an expiry in the past", keys.CreateRequest{Name: "k", Scopes: read, ExpiresAt: &past}, false},
		{"an expiry now", keys.CreateRequest{Name: "k", Scopes: read, ExpiresAt: &now}, false},
		{"an expiry in the future", keys.CreateRequest{Name: "k", Scopes: read, ExpiresAt: &future}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(now)
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
			if err != nil && (counters.ErrorCode(err) != counters.EINVALID || counters.ErrorMessage(err) == "") {
				t.Fatalf("Validate = %v, want invalid_argument with a message", err)
			}
		})
	}
}

func TestValidateDropsRepeatsAndNeverLeavesNil(t *testing.T) {
	req := keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead, keys.ScopeRead, keys.ScopeWrite},
		Prefixes: []string{"a/", "b/", "a/"}, Companies: []int64{3, 3}}
	if err := req.Validate(time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(req.Scopes) != 2 || len(req.Prefixes) != 2 || len(req.Companies) != 1 {
		t.Errorf("after Validate: %v %v %v, want the repeats dropped", req.Scopes, req.Prefixes, req.Companies)
	}
	bare := keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead}}
	if err := bare.Validate(time.Now()); err != nil {
		t.Fatal(err)
	}
	if bare.Prefixes == nil || bare.Companies == nil {
		t.Errorf("empty lists left nil (%#v, %#v): they would show as null", bare.Prefixes, bare.Companies)
	}
}

// A listing without a prefix: a key with one prefix lists its own, and
// only the admin sees the reserved names in it.
func TestListingsWithoutAPrefix(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{})
	p := func(prefixes ...string) *keys.Principal {
		_, secret := create(t, svc, keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead}, Prefixes: prefixes})
		pr, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	one, two := p("shop/"), p("shop/", "blog/")
	tests := []struct {
		name       string
		p          *keys.Principal
		prefix     string
		wantPrefix string
		wantHidden bool
	}{
		{"a key with one prefix lists its own", one, "", "shop/", true},
		{"a named prefix stays", one, "shop/books/", "shop/books/", false},
		{"a key with two prefixes names none", two, "", "", true},
		{"the admin lists everything, reserved names too", keys.Admin(), "", "", false},
		{"no principal hides them", nil, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.ListPrefix(tc.prefix); got != tc.wantPrefix {
				t.Errorf("ListPrefix(%q) = %q, want %q", tc.prefix, got, tc.wantPrefix)
			}
			if got := tc.p.HidesReserved(tc.prefix); got != tc.wantHidden {
				t.Errorf("HidesReserved(%q) = %v, want %v", tc.prefix, got, tc.wantHidden)
			}
		})
	}
}

// Allow is May for the principal of the context; a context without one is
// refused.
func TestAllowChecksThePrincipalOfTheContext(t *testing.T) {
	svc := keys.New(newMemStore(), keys.Options{})
	if err := svc.Allow(admin, keys.Write, keys.APIKeys()); err != nil {
		t.Errorf("the admin: %v", err)
	}
	if err := svc.Allow(context.Background(), keys.Read, keys.Name("a")); counters.ErrorCode(err) != counters.EPERMISSION {
		t.Errorf("no principal: %v, want permission_denied", err)
	}
	if p := keys.FromContext(admin); p == nil || !p.IsAdmin() || p.KeyID() != 0 {
		t.Errorf("FromContext = %v, want the admin, without a key id", p)
	}
}
