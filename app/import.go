package app

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"iter"
	"mime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// importHandlers serve POST /v1/import: the lines that GET /v1/export
// writes, read as they arrive (see body.go), applied in chunks by the
// counters service, answered with a report.
type importHandlers struct {
	svc         counters.Service
	stepTimeout time.Duration // each chunk's MySQL work (COUNTERS_MYSQL_TIMEOUT)
	timeout     time.Duration // the whole import, its body's arrival included
}

// maxImportLine is the longest line an import reads; a longer one is
// refused as malformed (an exported line is at most about 400 bytes).
const maxImportLine = 64 << 10

// importAccess needs the write scope to start an import; then each line's
// name is checked as it comes (lineCheck). A line outside the key's
// prefixes is refused (permission_denied) and the others applied; with
// atomic, that refusal makes the whole import 403, nothing applied, as for
// a batch.
func importAccess() access {
	return access{desc: "write lines", check: func(g gate) error {
		if err := g.allow(keys.Write, keys.Anything()); err != nil {
			return err
		}
		k, ctx := g.keys, g.c.UserContext()
		g.c.Locals(localChecked, lineCheck(func(name string) error { return k.Allow(ctx, keys.Write, keys.Name(name)) }))
		return nil
	}}
}

// lineCheck is the import's check of one line's counter name.
type lineCheck func(name string) error

// lines refuses, as they come, the lines whose names the caller may not
// write. Bad and reserved names are the domain's to refuse, with their own
// reasons.
func (check lineCheck) lines(lines iter.Seq[counters.ImportLine]) iter.Seq[counters.ImportLine] {
	return func(yield func(counters.ImportLine) bool) {
		for l := range lines {
			if name := l.Counter.Name; l.Reason == "" && l.Err == nil && counters.ValidateName(name) == nil && !counters.IsReserved(name) {
				if err := check(name); err != nil {
					l = l.Refuse(counters.ReasonPermission, "%s", counters.ErrorMessage(err))
				}
			}
			if !yield(l) {
				return
			}
		}
	}
}

func (h *importHandlers) importCounters(c *fiber.Ctx) error {
	if err := checkImportType(c); err != nil {
		return err
	}
	opts, err := importOptions(c)
	if err != nil {
		return err
	}
	opts.StepTimeout = h.stepTimeout
	body, closeBody, err := decodeBody(c, requestStream(c))
	if err != nil {
		return err
	}
	defer closeBody()
	fp := fingerprinter(c)
	fp.Write([]byte(string(opts.Mode) + " " + strconv.FormatBool(opts.Atomic) + "\n"))
	if hasIdempotencyKey(c) {
		k, err := idempotencyHeader(c)
		if err != nil {
			return err
		}
		opts.Key = &k
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.timeout)
	defer cancel()
	lines := checked[lineCheck](c).lines(readLines(io.TeeReader(body, fp), fp, opts.Key))
	report, err := h.svc.Import(ctx, opts, lines)
	if err != nil {
		if report != nil && report.Read > 0 {
			return &reportedError{error: err, report: toReportJSON(report)}
		}
		return err
	}
	markReplayed(c, report.Replayed, nil)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(toReportJSON(report))
}

// importTypes are the Content-Types an import's body may have (with any
// parameters), besides none: JSON lines' own, text, the form type that
// curl's --data-binary sends unless told otherwise (the guides' examples
// send it), and JSON's, which curl --json and many HTTP libraries send
// for anything JSON-like. openapi.yaml lists exactly these;
// app/import_types_test.go holds the two together.
var importTypes = []string{"application/x-ndjson", "application/jsonl", fiber.MIMEApplicationJSON, "text/plain", fiber.MIMEApplicationForm}

// checkImportType refuses any other type, 415, before a line is read:
// multipart/form-data (curl -F) wraps the file in parts that are no
// lines, and CSV or XML are other formats.
func checkImportType(c *fiber.Ctx) error {
	ct := c.Get(fiber.HeaderContentType)
	if ct == "" {
		return nil
	}
	if t, _, err := mime.ParseMediaType(ct); err == nil && slices.Contains(importTypes, t) {
		return nil
	}
	return counters.Errorf(codeUnsupportedMediaType, "The import body must be JSON lines, sent with Content-Type application/x-ndjson, application/jsonl, application/json, text/plain or application/x-www-form-urlencoded (what curl --data-binary sends), or none, not %q; nothing was changed.", ct)
}

// importOptions reads ?mode= (create, the default, or overwrite) and
// ?atomic= (true or false, the default).
func importOptions(c *fiber.Ctx) (counters.ImportOptions, error) {
	o := counters.ImportOptions{Mode: counters.ImportCreate}
	if m := c.Query("mode"); m != "" {
		o.Mode = counters.ImportMode(strings.Clone(m))
	} else if err := emptyQuery(c, "mode"); err != nil {
		return o, err
	}
	switch a := c.Query("atomic"); a {
	case "true":
		o.Atomic = true
	case "false":
	case "":
		if err := emptyQuery(c, "atomic"); err != nil {
			return o, err
		}
	default:
		return o, counters.Errorf(counters.EINVALID, "Query parameter \"atomic\" must be true or false.")
	}
	return o, o.Validate()
}

// readLines reads JSON lines from r, one counter each; blank lines are
// left out (their numbers still count). A line that is not an exported
// counter is refused as malformed; a read error ends the lines with Err.
// Once r is read to its end, fp has seen all of it, and its sum becomes
// key's fingerprint.
func readLines(r io.Reader, fp hash.Hash, key *counters.Idempotency) iter.Seq[counters.ImportLine] {
	return func(yield func(counters.ImportLine) bool) {
		br := bufio.NewReaderSize(r, maxImportLine)
		var n int64
		for {
			raw, err := br.ReadSlice('\n')
			n++
			if errors.Is(err, bufio.ErrBufferFull) {
				for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
					_, err = br.ReadSlice('\n')
				}
				if err != nil && err != io.EOF {
					yield(counters.ImportLine{Line: n, Err: bodyError(err)})
					return
				}
				l := counters.ImportLine{Line: n}.Refuse(counters.ReasonMalformed, "The line is longer than %d bytes.", maxImportLine)
				if !yield(l) || err == io.EOF {
					break
				}
				continue
			}
			if err != nil && err != io.EOF {
				yield(counters.ImportLine{Line: n, Err: bodyError(err)})
				return
			}
			if line := bytes.TrimSpace(raw); len(line) > 0 {
				if !yield(parseLine(n, line)) {
					return
				}
			}
			if err == io.EOF {
				break
			}
		}
		if key != nil {
			fp.Sum(key.Fingerprint[:0])
		}
	}
}

// bodyError is the error of a body that broke off.
func bodyError(err error) error {
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return counters.Wrap(counters.EINVALID, "app.import", err, "The request body is cut short or its gzip stream is corrupt.")
	}
	return counters.Wrap(counters.EINVALID, "app.import", err, "The request body could not be read to its end.")
}

// importLineJSON is a line as GET /v1/export writes it. updated_at is
// accepted and not used: an import's change is made now.
type importLineJSON struct {
	Name      *string         `json:"name"`
	Value     json.RawMessage `json:"value"`
	Min       json.RawMessage `json:"min"`
	Max       json.RawMessage `json:"max"`
	CreatedAt *time.Time      `json:"created_at"`
	UpdatedAt *time.Time      `json:"updated_at"`
}

// parseLine reads one line strictly: a JSON object with a string name, an
// integer value, optional integer-or-null bounds, optional RFC 3339 times,
// and nothing else.
func parseLine(n int64, raw []byte) counters.ImportLine {
	l := counters.ImportLine{Line: n}
	malformed := func(format string, args ...any) counters.ImportLine {
		return l.Refuse(counters.ReasonMalformed, format, args...)
	}
	if !utf8.Valid(raw) {
		return malformed("The line is not valid UTF-8.")
	}
	var v importLineJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		var ue *json.UnmarshalTypeError
		var te *time.ParseError
		if errors.As(err, &te) {
			return malformed("created_at and updated_at must be RFC 3339 times.")
		}
		if errors.As(err, &ue) && ue.Field != "" {
			return malformed("%q has the wrong type.", ue.Field)
		}
		if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
			return malformed("Unknown field %s.", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return malformed("The line is not one JSON object.")
	}
	if v.Name == nil {
		return malformed("The line has no \"name\".")
	}
	l.Counter.Name = *v.Name
	if v.Value == nil {
		return malformed("The line has no \"value\".")
	}
	var err error
	if l.Counter.Value, err = strconv.ParseInt(string(v.Value), 10, 64); err != nil {
		return malformed("\"value\" must be an integer between -9223372036854775808 and 9223372036854775807.")
	}
	for _, b := range []struct {
		key string
		raw json.RawMessage
		dst **int64
	}{{"min", v.Min, &l.Counter.Min}, {"max", v.Max, &l.Counter.Max}} {
		if b.raw == nil || string(b.raw) == "null" {
			continue
		}
		x, err := strconv.ParseInt(string(b.raw), 10, 64)
		if err != nil {
			return malformed("%q must be an integer or null.", b.key)
		}
		*b.dst = &x
	}
	if v.CreatedAt != nil {
		l.Counter.CreatedAt = *v.CreatedAt
	}
	return l
}

// importReportJSON is the answer of an import.
type importReportJSON struct {
	Mode        counters.ImportMode `json:"mode"`
	Atomic      bool                `json:"atomic"`
	Applied     bool                `json:"applied"`
	Read        int64               `json:"read"`
	Created     int64               `json:"created"`
	Overwritten int64               `json:"overwritten"`
	Skipped     int64               `json:"skipped"`
	Refused     int64               `json:"refused"`
	Lines       []reportedLineJSON  `json:"lines"`
	Truncated   bool                `json:"truncated"`
}

type reportedLineJSON struct {
	Line    int64  `json:"line"`
	Name    string `json:"name,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func toReportJSON(r *counters.ImportReport) importReportJSON {
	out := importReportJSON{Mode: r.Mode, Atomic: r.Atomic, Applied: r.Applied, Read: r.Read, Created: r.Created,
		Overwritten: r.Overwritten, Skipped: r.Skipped, Refused: r.Refused, Lines: make([]reportedLineJSON, len(r.Lines)), Truncated: r.Truncated}
	for i, l := range r.Lines {
		out.Lines[i] = reportedLineJSON(l)
	}
	// A chunk's refusals are counted as they are read, its skips when it is
	// written: in line order for the reader.
	slices.SortStableFunc(out.Lines, func(a, b reportedLineJSON) int { return cmp.Compare(a.Line, b.Line) })
	return out
}
