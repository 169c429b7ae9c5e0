package app

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
)

// HTTP headers of idempotent retries.
const (
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed marks an answer that was recorded for an earlier request
	// with the same key: this request changed nothing.
	headerReplayed = "Idempotent-Replayed"
)

// hasIdempotencyKey reports whether the request carries the header at all;
// an empty or malformed one is then refused by the domain (400).
func hasIdempotencyKey(c *fiber.Ctx) bool {
	return len(c.Request().Header.PeekAll(headerIdempotencyKey)) > 0
}

// idempotencyKey reads the key and fingerprints the request: method, route
// and the request as parsed (canonical), so that a retry matches however
// its JSON was spaced or ordered, and whether the step came in the body or
// the query.
func idempotencyKey(c *fiber.Ctx, canonical any) (counters.Idempotency, error) {
	k, err := idempotencyHeader(c)
	if err != nil {
		return k, err
	}
	body, err := json.Marshal(canonical)
	if err != nil {
		return counters.Idempotency{}, err
	}
	h := fingerprinter(c)
	h.Write(body)
	h.Sum(k.Fingerprint[:0])
	return k, nil
}

// idempotencyHeader reads the key, without a fingerprint yet.
func idempotencyHeader(c *fiber.Ctx) (counters.Idempotency, error) {
	values := c.Request().Header.PeekAll(headerIdempotencyKey)
	if len(values) != 1 {
		return counters.Idempotency{}, counters.Errorf(counters.EINVALID, "Give one Idempotency-Key header, not %d.", len(values))
	}
	// A key belongs to the API key that sent it (its Owner): two apps'
	// "order-1" are two keys.
	return counters.Idempotency{Key: string(values[0]), Owner: principal(c).KeyID()}, nil // a copy: Fiber reuses the header's memory
}

// fingerprinter starts a request's fingerprint with its method and route;
// the request as parsed follows.
func fingerprinter(c *fiber.Ctx) hash.Hash {
	h := sha256.New()
	h.Write([]byte(c.Method() + " " + c.Route().Path + "\n"))
	return h
}

// markReplayed flags an answer rendered from the record of an earlier
// request with the same key, a result or a refusal (err): this request
// changed nothing.
func markReplayed(c *fiber.Ctx, replayed bool, err error) {
	if replayed || errors.Is(err, counters.ErrReplayed) {
		c.Set(headerReplayed, "true")
	}
}

func (h *counterHandlers) incrementOnce(c *fiber.Ctx, name string, by int64, extra counters.Extra) error {
	key, err := idempotencyKey(c, struct {
		Name  string
		By    int64
		Extra counters.Extra `json:"Labels,omitempty"` // as counters.Increment spells it: the fingerprints of before
	}{name, by, extra})
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	v, replayed, err := h.svc.IncrementWithOnce(ctx, key, name, by, extra)
	if markReplayed(c, replayed, err); err != nil {
		return err
	}
	return sendValue(c, name, v)
}

func (h *counterHandlers) setOnce(c *fiber.Ctx, req counters.SetRequest) error {
	key, err := idempotencyKey(c, req)
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	ctr, created, replayed, err := h.svc.SetOnce(ctx, key, req)
	if markReplayed(c, replayed, err); err != nil {
		return err
	}
	return sendCounter(c, ctr, created)
}
