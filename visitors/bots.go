package visitors

import (
	"hash/maphash"

	"github.com/x-way/crawlerdetect"

	"github.com/countersvc/countersvc/internal/foundation/memo"
)

// Bots tells known crawlers by their User-Agent, from crawlerdetect's
// maintained list (thousands of patterns, updated as crawlers appear). Its
// one regular expression costs about 0.3 ms per User-Agent on this
// machine, far more than the rest of a page hit, so answers are kept per
// User-Agent: real traffic comes from a few thousand of them. The cache is
// keyed by a hash under a process-random seed, so it holds no User-Agent,
// and is bounded: when full it starts over.
type Bots struct {
	seed  maphash.Seed
	known *memo.Map[uint64, bool]
}

// botsKept bounds the cache: 64k entries of 9 bytes and map overhead.
const botsKept = 1 << 16

// NewBots returns the crawler test.
func NewBots() *Bots { return &Bots{seed: maphash.MakeSeed(), known: memo.New[uint64, bool](botsKept)} }

// Is reports whether userAgent is a known crawler's, or missing: browsers
// always send one, scripts often do not.
func (b *Bots) Is(userAgent string) bool {
	if userAgent == "" {
		return true
	}
	h := maphash.String(b.seed, userAgent)
	if bot, ok := b.known.Get(h); ok {
		return bot
	}
	bot := crawlerdetect.IsCrawler(userAgent)
	b.known.Put(h, bot)
	return bot
}
