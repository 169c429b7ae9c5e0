package app

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"time"

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
//
// Asked for CSV (csvAsked), the lines are name,value,created_at,updated_at
// after a header row, and a later failure ends the stream with one line of
// one field, "error: <code>: <message>": a CSV reader that holds each
// record to the header's four fields (Go's encoding/csv does by default)
// stops there rather than take the cut stream for the whole.
func (h *counterHandlers) export(c *fiber.Ctx) error {
	l := checked[listing](c)
	asCSV, err := csvAsked(c, "application/x-ndjson")
	if err != nil {
		return err
	}
	f := counters.ListFilter{Prefix: l.prefix, Limit: counters.MaxListLimit, Fresh: true}
	ctx, cancel := h.dbContext(c)
	page, err := l.list(ctx, h.svc, f)
	cancel()
	if err != nil {
		return err
	}
	newLines := jsonLines
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	if asCSV {
		newLines = csvLines
		c.Set(fiber.HeaderContentType, csvType)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if c.Method() == fiber.MethodHead {
		// The headers alone: a stream writer would still end a chunked
		// body with its last line, which the client of a HEAD reads as
		// the start of the next answer on the connection.
		return nil
	}
	// The later pages are read after the handler has returned: they keep
	// the request's values but not its end.
	base := context.WithoutCancel(c.UserContext())
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		lines := newLines(w)
		for {
			for i := range page.Counters {
				if lines.counter(&page.Counters[i]) != nil {
					return // the client went away
				}
			}
			if lines.flush() != nil || page.NextAfter == nil {
				return
			}
			f.After = *page.NextAfter
			ctx, cancel := context.WithTimeout(base, h.timeout)
			page, err = l.list(ctx, h.svc, f)
			cancel()
			if err != nil {
				lines.fail(toDomain(err))
				return
			}
		}
	})
	return nil
}

// exportLines is how an export writes its counters: JSON lines or CSV.
type exportLines interface {
	counter(c *counters.Counter) error
	fail(err error) // the line that ends a cut stream
	flush() error
}

type jsonExport struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func jsonLines(w *bufio.Writer) exportLines { return jsonExport{w: w, enc: json.NewEncoder(w)} }

func (j jsonExport) counter(c *counters.Counter) error { return j.enc.Encode(toJSON(c)) }
func (j jsonExport) flush() error                      { return j.w.Flush() }
func (j jsonExport) fail(err error) {
	j.enc.Encode(errorBody{Error: errorDetail{Code: counters.ErrorCode(err), Message: counters.ErrorMessage(err)}})
}

type csvExport struct {
	w   *bufio.Writer
	csv *csv.Writer
}

// csvLines starts a CSV export with its header row.
func csvLines(w *bufio.Writer) exportLines {
	out := csvExport{w: w, csv: newCSV(w)}
	out.csv.Write([]string{"name", "value", "created_at", "updated_at"})
	return out
}

func (x csvExport) counter(c *counters.Counter) error {
	return x.csv.Write([]string{textCell(c.Name), strconv.FormatInt(c.Value, 10),
		c.CreatedAt.Format(time.RFC3339Nano), c.UpdatedAt.Format(time.RFC3339Nano)})
}

func (x csvExport) flush() error {
	x.csv.Flush()
	if err := x.csv.Error(); err != nil {
		return err
	}
	return x.w.Flush()
}

func (x csvExport) fail(err error) {
	x.csv.Write([]string{"error: " + counters.ErrorCode(err) + ": " + counters.ErrorMessage(err)})
	x.csv.Flush()
}
