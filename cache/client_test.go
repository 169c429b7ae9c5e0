package cache_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
)

func TestNewClientPicksTheTopologyTheURLNames(t *testing.T) {
	t.Parallel()
	const timeout = 150 * time.Millisecond
	tests := []struct {
		url    string
		want   string // client type, or "" for an error
		errHas string
	}{
		{"redis://127.0.0.1:6379/0", "*redis.Client", ""},
		{"rediss://user:secret@cache.example:6380/2", "*redis.Client", ""},
		{"unix:///run/redis.sock?db=1", "*redis.Client", ""},
		{"redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000", "*redis.ClusterClient", ""},
		{"redis-sentinel://10.0.0.1:26379/0?master_name=counters&addr=10.0.0.2:26379", "*redis.Client", ""},
		{"redis-sentinel://10.0.0.1:26379/0", "", "master_name"},
		{"redis-sentinel://10.0.0.1:26379/0?master_name=counters&replica_only=true", "", "replicas"},
		{"redis://10.0.0.1:7000?addr=10.0.0.2:7000&read_only=true", "", "replicas"},
		{"redis://10.0.0.1:7000?addr=10.0.0.2:7000&route_randomly=true", "", "replicas"},
		{"redis://127.0.0.1:6379/zero", "", "database"},
		{"redis://127.0.0.1:6379/0?no_such_option=1", "", "no_such_option"},
		{"http://127.0.0.1:6379/0", "", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := cache.NewClient(tt.url, timeout)
			if tt.want == "" {
				if err == nil {
					c.Close()
					t.Fatalf("NewClient(%q) succeeded, want an error", tt.url)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %q does not mention %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := fmt.Sprintf("%T", c); got != tt.want {
				t.Fatalf("client is %s, want %s", got, tt.want)
			}
			if sc, ok := c.(*redis.Client); ok {
				o := sc.Options()
				if o.ReadTimeout != timeout || o.WriteTimeout != timeout || o.PoolTimeout != timeout || o.MaxRetries != 0 {
					t.Fatalf("read %v write %v pool %v retries %d, want the timeout and no retries",
						o.ReadTimeout, o.WriteTimeout, o.PoolTimeout, o.MaxRetries)
				}
			}
		})
	}
}
