package keys_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// oneKey is a store that holds one key, for measuring what the service
// itself costs a request; the tests of the keys against MySQL are in app/.
type oneKey struct {
	key  keys.Key
	hash [32]byte
}

func (s *oneKey) Create(_ context.Context, k *keys.Key, hash [32]byte) error {
	k.ID, s.key, s.hash = 1, *k, hash
	return nil
}

func (s *oneKey) ByHash(_ context.Context, hash [32]byte) (*keys.Key, error) {
	if hash != s.hash {
		return nil, counters.Errorf(counters.ENOTFOUND, "No such API key.")
	}
	k := s.key
	return &k, nil
}

func (s *oneKey) Get(context.Context, int64) (*keys.Key, error)   { return &s.key, nil }
func (s *oneKey) List(context.Context) ([]keys.Key, error)        { return []keys.Key{s.key}, nil }
func (s *oneKey) Revoke(context.Context, int64, time.Time) error  { return nil }
func (s *oneKey) Touch(context.Context, []int64, time.Time) error { return nil }

// What authentication and the name check cost a request, with the admin
// token and with a key scoped to a prefix, from many goroutines at once.
func BenchmarkAuthenticateAndCheck(b *testing.B) {
	svc := keys.New(&oneKey{}, keys.Options{AdminToken: "bench-admin-token"})
	admin := keys.NewContext(context.Background(), keys.Admin())
	_, secret, err := svc.Create(admin, keys.CreateRequest{Name: "bench", Scopes: []keys.Scope{keys.ScopeWrite}, Prefixes: []string{"bench/"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, bearer string }{{"admin token", "bench-admin-token"}, {"scoped key", secret}} {
		b.Run(c.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := svc.Authenticate(context.Background(), keys.Credentials{Bearer: c.bearer})
					if err != nil {
						b.Fatal(err)
					}
					if err := p.Name("bench/hot", keys.Write); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
