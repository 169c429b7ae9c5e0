package keys_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// A stream's watch of its key ends once the key is revoked, by this
// process or another (found within the recheck), or expires; a stopped
// watch, the admin's and a public one never end; a store that cannot
// answer ends nothing.
func TestAWatchEndsWhenItsKeyCanNoLongerBeUsed(t *testing.T) {
	const recheck = 20 * time.Millisecond
	tests := []struct {
		name    string
		expires bool
		after   func(svc *keys.Service, store *memStore, k *keys.Key, stop func(), clock *lockedClock) // what happens to the key
		ends    bool
	}{
		{"revoked here", false, func(svc *keys.Service, _ *memStore, k *keys.Key, _ func(), _ *lockedClock) {
			svc.Revoke(admin, k.ID)
		}, true},
		{"revoked by another process", false, func(_ *keys.Service, store *memStore, k *keys.Key, _ func(), _ *lockedClock) {
			store.Revoke(context.Background(), k.ID, time.Now())
		}, true},
		{"expired", true, func(_ *keys.Service, _ *memStore, _ *keys.Key, _ func(), c *lockedClock) {
			c.add(2 * time.Hour)
		}, true},
		{"in use", false, func(*keys.Service, *memStore, *keys.Key, func(), *lockedClock) {}, false},
		{"stopped, then revoked", false, func(svc *keys.Service, _ *memStore, k *keys.Key, stop func(), _ *lockedClock) {
			stop()
			svc.Revoke(admin, k.ID)
		}, false},
		{"revoked while the store is down", false, func(_ *keys.Service, store *memStore, k *keys.Key, _ func(), _ *lockedClock) {
			store.mu.Lock()
			store.fail = counters.Errorf(counters.EUNAVAILABLE, "MySQL is down.")
			store.mu.Unlock()
			store.Revoke(context.Background(), k.ID, time.Now())
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := &lockedClock{at: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
			store := newMemStore()
			svc := keys.New(store, keys.Options{Recheck: recheck, Now: clock.now})
			req := keys.CreateRequest{Name: "stream", Scopes: []keys.Scope{keys.ScopeRead}}
			if tt.expires {
				soon := clock.now().Add(time.Hour)
				req.ExpiresAt = &soon
			}
			k, secret := create(t, svc, req)
			p, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { svc.RecheckWatches(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			gone, stop := svc.Watch(p)
			defer stop()
			tt.after(svc, store, k, stop, clock)
			// Ten rechecks: enough for any of them to end the watch.
			select {
			case <-gone:
				if !tt.ends {
					t.Fatal("the watch ended")
				}
			case <-time.After(10 * recheck):
				if tt.ends {
					// It must end; give a loaded machine its time, then fail.
					select {
					case <-gone:
					case <-time.After(10 * time.Second):
						t.Fatal("the watch did not end within 10 s")
					}
				}
			}
		})
	}
	t.Run("the admin and a public request", func(t *testing.T) {
		svc := keys.New(newMemStore(), keys.Options{})
		for _, p := range []*keys.Principal{keys.Admin(), nil} {
			gone, stop := svc.Watch(p)
			if gone != nil {
				t.Errorf("Watch(%v) gave a channel, want nil: it cannot be revoked", p)
			}
			stop()
		}
	})
}

type lockedClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *lockedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *lockedClock) add(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

// Past Recheck a request goes on with what is known and one lookup runs
// in the background; past MaxStale requests wait for the store.
func TestAKeyIsLookedUpAgainInTheBackgroundPastRecheck(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{Recheck: 10 * time.Millisecond, MaxStale: time.Hour})
	k, secret := create(t, svc, keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead}})
	auth := func() error {
		_, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret})
		return err
	}
	if err := auth(); err != nil {
		t.Fatal(err)
	}
	store.Revoke(context.Background(), k.ID, time.Now()) // by another process
	time.Sleep(20 * time.Millisecond)
	if err := auth(); err != nil {
		t.Fatalf("the first request past Recheck: %v, want what was known (the key)", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for auth() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the background lookup never saw the revocation")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := auth(); counters.ErrorCode(err) != counters.EUNAUTHENTICATED {
		t.Fatalf("after the lookup: %v, want unauthenticated", err)
	}
}

// What a principal may do and touch: everything for the admin, its own
// scopes and prefixes for a key (but every name for a key with the admin
// scope), nothing for no principal; a service without an admin token is
// protected (loopback and keys only).
func TestAPrincipalsScopesAndPrefixes(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{AdminToken: "tok"})
	_, reader := create(t, svc, keys.CreateRequest{Name: "r", Scopes: []keys.Scope{keys.ScopeRead}, Prefixes: []string{"shop/", "blog/"}})
	_, adminKey := create(t, svc, keys.CreateRequest{Name: "a", Scopes: []keys.Scope{keys.ScopeAdmin}})
	principal := func(secret string) *keys.Principal {
		p, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		p        *keys.Principal
		scopes   []keys.Scope
		prefixes []string
	}{
		{"the admin token", keys.Admin(), []keys.Scope{keys.ScopeRead, keys.ScopeWrite, keys.ScopeAdmin}, []string{""}},
		{"a read key", principal(reader), []keys.Scope{keys.ScopeRead}, []string{"blog/", "shop/"}},
		{"a key with the admin scope", principal(adminKey), []keys.Scope{keys.ScopeAdmin}, []string{""}},
		{"nobody", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scopes, prefixes := tt.p.Scopes(), tt.p.Prefixes()
			slices.Sort(prefixes)
			if !slices.Equal(scopes, tt.scopes) || !slices.Equal(prefixes, tt.prefixes) {
				t.Fatalf("scopes %v prefixes %q, want %v %q", scopes, prefixes, tt.scopes, tt.prefixes)
			}
			if len(scopes) > 0 {
				scopes[0] = "changed" // a copy: the principal keeps its own
				if tt.p.Scopes()[0] == "changed" {
					t.Fatal("Scopes handed out the principal's own slice")
				}
			}
		})
	}
	if svc.Protected() || !keys.New(store, keys.Options{}).Protected() {
		t.Error("Protected: want false with an admin token, true without")
	}
}

// TouchEvery writes the keys' use every interval until its context ends.
func TestTouchEveryWritesTheUseEachInterval(t *testing.T) {
	store := newMemStore()
	svc := keys.New(store, keys.Options{})
	k, secret := create(t, svc, keys.CreateRequest{Name: "k", Scopes: []keys.Scope{keys.ScopeRead}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.TouchEvery(ctx, time.Millisecond); close(done) }()
	if _, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: secret}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		store.mu.Lock()
		_, ok := store.touched[k.ID]
		store.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key's use was not written within 10 s of a 1 ms interval")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("TouchEvery did not end within 10 s of its context")
	}
}
