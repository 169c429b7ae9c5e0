// Package gcpace paces Go's garbage collector to what the service keeps
// live (see Pace).
package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// The collector's pace. The service keeps about 8 MB of long-lived,
// pointer-dense tables (the User-Agent parser's trie and the crawler
// patterns of page hits' labels), which every collection marks again. At
// Go's default (GOGC=100) the heap grows by what is live before the next
// collection, about 9 MB here, a few thousand requests: collections then
// cost a 1,000-counter increment 12-19 µs of the service's CPU and a hot
// counter's 5-9 (docs/performance.md). So the heap may grow by at least
// gcHeadroom between collections: GOGC is raised, up to gcMaxPercent,
// while what a collection marks is small, and is back at 100 once that
// is gcHeadroom or more, so the heap never holds more than gcHeadroom
// beyond what Go's default would let it.
const (
	gcHeadroom   = 32 << 20
	gcMaxPercent = 400
	gcEvery      = time.Second
)

// gcPercentFor is the GOGC that lets the heap grow by gcHeadroom past
// marked, what the last collection marked (live heap, stacks, globals),
// within 100 and gcMaxPercent, in steps of 50 so that it rarely changes.
func gcPercentFor(marked uint64) int {
	if marked == 0 {
		return gcMaxPercent
	}
	p := int(min(gcHeadroom*100/marked, gcMaxPercent))
	return max(p/50*50, 100)
}

// Pace keeps GOGC at gcPercentFor what is live, checked every gcEvery
// until ctx ends, unless the environment sets GOGC: that one is Go's own
// and wins (GOGC=100 restores Go's pace; GOMEMLIMIT caps the heap either
// way).
func Pace(ctx context.Context) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	pace := func(current int) int {
		metrics.Read(samples)
		var marked uint64
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				marked += s.Value.Uint64()
			}
		}
		if p := gcPercentFor(marked); p != current {
			debug.SetGCPercent(p)
			return p
		}
		return current
	}
	current := pace(100)
	go deadline.Every(ctx, gcEvery, func(context.Context) { current = pace(current) })
}
