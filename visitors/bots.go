package visitors

import (
	"hash/maphash"
	"sync"

	"github.com/x-way/crawlerdetect"
)

// Bots tells known crawlers by their User-Agent, from crawlerdetect's
// maintained list (thousands of patterns, updated as crawlers appear). Its
// one regular expression costs about 0.3 ms per User-Agent on this
// machine, far more than the rest of a page hit, so answers are kept per
// User-Agent: real traffic comes from a few thousand of them. The cache is
// keyed by a hash under a process-random seed, so it holds no User-Agent,
// and is bounded: when full it starts over.
type Bots struct {
	seed maphash.Seed

	mu    sync.RWMutex
	known map[uint64]bool
}

// botsKept bounds the cache: 64k entries of 9 bytes and map overhead.
const botsKept = 1 << 16

// NewBots returns the crawler test.
func NewBots() *Bots { return &Bots{seed: maphash.MakeSeed(), known: map[uint64]bool{}} }

// Is reports whether userAgent is a known crawler's, or missing: browsers
// always send one, scripts often do not.
func (b *Bots) Is(userAgent string) bool {
	if userAgent == "" {
		return true
	}
	h := maphash.String(b.seed, userAgent)
	b.mu.RLock()
	bot, ok := b.known[h]
	b.mu.RUnlock()
	if ok {
		return bot
	}
	bot = crawlerdetect.IsCrawler(userAgent)
	b.mu.Lock()
	if len(b.known) >= botsKept {
		clear(b.known)
	}
	b.known[h] = bot
	b.mu.Unlock()
	return bot
}
