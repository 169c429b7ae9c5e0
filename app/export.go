package app

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
)

// export streams every counter whose name starts with ?prefix= (all of them
// without one) as JSON lines, one counter per line in name order, as the
// list endpoint shows it: name, value, min and max when bounded, created_at
// and updated_at. It reads a page of counters at a time (keyset), so the
// service holds one page however many counters there are. The first page is
// read before the answer starts, so that MySQL being down is a 503; a later
// failure ends the stream with one line {"error": {...}}, so that a reader
// never takes a cut stream for the whole.
func (h *counterHandlers) export(c *fiber.Ctx) error {
	f := counters.ListFilter{Prefix: strings.Clone(c.Query("prefix")), Limit: counters.MaxListLimit, Fresh: true}
	ctx, cancel := h.dbContext(c)
	page, err := h.svc.List(ctx, f)
	cancel()
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Set(fiber.HeaderCacheControl, "no-store")
	if c.Method() == fiber.MethodHead {
		// The headers alone: a stream writer would still end a chunked
		// body with its last line, which the client of a HEAD reads as
		// the start of the next answer on the connection.
		return nil
	}
	// The later pages are read after the handler has returned: they keep
	// the request's values (who is asking, for the keys' checks) but not
	// its end.
	base := context.WithoutCancel(c.UserContext())
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		enc := json.NewEncoder(w)
		for {
			for i := range page.Counters {
				if enc.Encode(toJSON(&page.Counters[i])) != nil {
					return // the client went away
				}
			}
			if page.NextAfter == nil || w.Flush() != nil {
				return
			}
			f.After = *page.NextAfter
			ctx, cancel := context.WithTimeout(base, h.timeout)
			page, err = h.svc.List(ctx, f)
			cancel()
			if err != nil {
				err = toDomain(err)
				enc.Encode(errorBody{Error: errorDetail{Code: counters.ErrorCode(err), Message: counters.ErrorMessage(err)}})
				return
			}
		}
	})
	return nil
}
