package visitors

import (
	"hash/maphash"
	"sync"

	"github.com/x-way/crawlerdetect"

	"github.com/countersvc/countersvc/internal/foundation/memo"
)

// Bots tells known crawlers by their User-Agent, from crawlerdetect's
// maintained list (thousands of patterns, updated as crawlers appear). The
// library costs hundreds of µs an agent on this machine, far more than the
// rest of a page hit; crawlerTest gives its answers at a fraction of that
// (see there), and answers are also kept per User-Agent: real traffic
// comes from a few thousand of them. The caches are keyed by a hash under
// a process-random seed, so they hold no User-Agent, and are bounded: when
// full they start over.
type Bots struct {
	seed  maphash.Seed
	known *memo.Map[uint64, bool] // by agent
	rests *memo.Map[uint64, bool] // by what crawlerTest leaves of an agent
	test  *crawlerTest            // nil: crawlerdetect itself
}

// botsKept bounds each cache: 64k entries of 9 bytes and map overhead.
const botsKept = 1 << 16

// NewBots returns the crawler test.
func NewBots() *Bots {
	return &Bots{seed: maphash.MakeSeed(), known: memo.New[uint64, bool](botsKept), rests: memo.New[uint64, bool](botsKept), test: theCrawlerTest()}
}

// theCrawlerTest is built once per process: its expressions are shared.
var theCrawlerTest = sync.OnceValue(newCrawlerTest)

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
	bot := b.crawler(userAgent)
	b.known.Put(h, bot)
	return bot
}

// crawler is crawlerdetect.IsCrawler(userAgent).
func (b *Bots) crawler(userAgent string) bool {
	if b.test == nil {
		return crawlerdetect.IsCrawler(userAgent)
	}
	rest, ok := b.test.rest(userAgent)
	if !ok {
		return crawlerdetect.IsCrawler(userAgent)
	}
	h := maphash.String(b.seed, rest)
	if bot, ok := b.rests.Get(h); ok {
		return bot
	}
	bot := b.test.crawlers.MatchString(rest)
	b.rests.Put(h, bot)
	return bot
}
