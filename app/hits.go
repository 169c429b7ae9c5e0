package app

import (
	"context"
	"log/slog"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"countersvc/counters"
)

// hitHandlers serves the public page-hit endpoints: no token, only names
// under the public prefixes, per-client limits when Redis is there.
type hitHandlers struct {
	svc     counters.Service
	public  counters.PublicNames
	proxies trustedProxies
	limiter counters.HitLimiter // nil: no rate limit
	deduper counters.HitDeduper // nil: every hit counts
	dbBudget
	log     *slog.Logger
	metrics *hitMetrics
}

// publicName is the :name of a public endpoint: a valid name under one of
// the public prefixes, so that no private counter can be read or counted
// without the token.
func (h *hitHandlers) publicName(c *fiber.Ctx) (string, error) {
	name, err := pathName(c, "name")
	if err != nil {
		return "", err
	}
	if !h.public.Contains(name) {
		return "", counters.Errorf(counters.EPERMISSION, "Only names under the public prefixes can be used without a token.")
	}
	return name, nil
}

func (h *hitHandlers) hit(c *fiber.Ctx) error {
	name, err := h.publicName(c)
	if err != nil {
		return err
	}
	v, err := h.count(c, name)
	if err != nil {
		return err
	}
	return sendValue(c, name, v)
}

// badge answers a public counter's badge, its value from value: h.count
// for the hit badge, h.read for the read-only one. The query is checked
// before value runs, so a bad badge URL changes nothing.
func (h *hitHandlers) badge(value func(*fiber.Ctx, string) (int64, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		name, err := h.publicName(c)
		if err != nil {
			return err
		}
		b, err := parseBadge(c)
		if err != nil {
			return err
		}
		v, err := value(c, name)
		if err != nil {
			return err
		}
		return b.send(c, v)
	}
}

// read is a counter's value without counting a hit; ENOTFOUND if missing.
func (h *hitHandlers) read(c *fiber.Ctx, name string) (int64, error) {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	ctr, err := h.svc.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	return ctr.Value, nil
}

// count applies the rate limit and the de-duplication, then counts the hit,
// or, for a repeat, reads the current value. Both limits fail open: when
// Redis is down or slow the hit is counted, as it would be without Redis.
func (h *hitHandlers) count(c *fiber.Ctx, name string) (int64, error) {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if c.Method() == fiber.MethodHead {
		// Link checkers and crawlers probe with HEAD: that is no page view.
		return h.current(ctx, name)
	}
	addr := h.proxies.clientAddr(c)
	if err := h.checkRate(c, addr); err != nil {
		return 0, err
	}
	client := addr.String() + " " + c.Get(fiber.HeaderUserAgent)
	if !h.first(c, client, name) {
		ctr, err := h.svc.Get(ctx, name)
		if err == nil {
			h.metrics.hits.WithLabelValues("repeat").Inc()
			return ctr.Value, nil
		}
		// A counter deleted within the window is counted afresh.
		if counters.ErrorCode(err) != counters.ENOTFOUND {
			return 0, err
		}
	}
	v, err := h.svc.Increment(ctx, name, 1)
	if err != nil {
		// Let the client's retry count.
		if h.deduper != nil {
			if ferr := h.deduper.Forget(c.UserContext(), client, name); ferr != nil {
				h.failOpen(c, "dedup", ferr)
			}
		}
		return 0, err
	}
	h.metrics.hits.WithLabelValues("counted").Inc()
	return v, nil
}

// checkRate takes one hit from the client's budget; ERATELIMITED with
// Retry-After set when it is spent.
func (h *hitHandlers) checkRate(c *fiber.Ctx, addr netip.Addr) error {
	if h.limiter == nil {
		return nil
	}
	wait, err := h.limiter.Allow(c.UserContext(), rateKey(addr))
	if err != nil {
		h.failOpen(c, "rate_limit", err)
		return nil
	}
	if wait <= 0 {
		return nil
	}
	h.metrics.hits.WithLabelValues("rate_limited").Inc()
	secs := retryAfterSeconds(wait)
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	return counters.Errorf(counters.ERATELIMITED, "Too many hits from this address; retry in %d seconds.", secs)
}

// first reports whether the hit is the client's first on name within the
// dedup window; without Redis every hit is.
func (h *hitHandlers) first(c *fiber.Ctx, client, name string) bool {
	if h.deduper == nil {
		return true
	}
	first, err := h.deduper.First(c.UserContext(), client, name)
	if err != nil {
		h.failOpen(c, "dedup", err)
		return true
	}
	return first
}

// current is the counter's value, 0 for one that does not exist yet.
func (h *hitHandlers) current(ctx context.Context, name string) (int64, error) {
	ctr, err := h.svc.Get(ctx, name)
	if counters.ErrorCode(err) == counters.ENOTFOUND {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	return ctr.Value, nil
}

// failOpen records that a limit could not be checked. It logs at debug
// level only: with Redis down this happens on every hit, /readyz and the
// metric already say so.
func (h *hitHandlers) failOpen(c *fiber.Ctx, limit string, err error) {
	h.metrics.limitErrors.WithLabelValues(limit).Inc()
	h.log.Debug("hit limit skipped", "request_id", requestID(c), "limit", limit, "error", err.Error())
}

// retryAfterSeconds rounds up, so a client that waits as told is let in.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
