package cache_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/testenv"
)

// BenchmarkAdmit is the limits of a page hit with the defaults, from 64
// goroutines at once as under the bench's 64 connections, every hit a new
// client (most hits are): the service's allocations a hit (-benchmem) and
// Redis's CPU a hit (redis-µs/hit, from its INFO), figures that hold on a
// busy machine where the time a hit does not.
func BenchmarkAdmit(b *testing.B) {
	r := testenv.StartRedis(b)
	rdb := r.DeadlineClient(b)
	l := hitLimits(b, rdb, cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: 30 * time.Second, ProxyRate: 600}, 5*time.Second)
	ctx := context.Background()
	var n atomic.Int64
	before := redisCPU(b, rdb)
	b.SetParallelism(32) // 64 on two cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := strconv.FormatInt(n.Add(1), 16)
			h := hits.Hit{Client: "0123456789abcdef0123456789ab" + i, Visitor: "fedcba9876543210fedcba98765" + i, Name: "hits/bench/page"}
			if _, _, err := l.Admit(ctx, h); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric((redisCPU(b, rdb)-before)*1e6/float64(b.N), "redis-µs/hit")
}

// redisCPU is the CPU seconds Redis has used.
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
