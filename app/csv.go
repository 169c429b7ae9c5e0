package app

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// csvType is the media type of every CSV answer (history, breakdowns,
// the export): RFC 4180, a header row first, written by encoding/csv
// (fields quoted when they hold a comma, a quote or a line break; lines
// end with CRLF, as RFC 4180 has them).
const csvType = "text/csv; charset=utf-8"

// form is what a history or breakdown read asks of its answer's form.
type form struct {
	csv       bool // CSV instead of JSON (csvAsked)
	annotated bool // ?annotations=true: the range's annotations beside it (JSON only)
}

// formOf reads ?format=, Accept and ?annotations= of a read whose JSON is
// jsonType.
func formOf(c *fiber.Ctx, jsonType string) (form, error) {
	asCSV, err := csvAsked(c, jsonType)
	if err != nil {
		return form{}, err
	}
	annotated, err := queryChoice(c, "annotations", "true", "false")
	return form{csv: asCSV, annotated: annotated == "true"}, err
}

// csvAsked says whether a read that answers jsonType by default answers
// CSV instead: ?format=csv, or no format and an Accept header that
// prefers text/csv to jsonType. ?format=json is jsonType whatever Accept
// says; any other format is EINVALID. An Accept that names neither is
// answered jsonType, as before CSV was there.
func csvAsked(c *fiber.Ctx, jsonType string) (bool, error) {
	format, err := queryChoice(c, "format", "json", "csv")
	if err != nil || format != "" {
		return format == "csv", err
	}
	c.Vary(fiber.HeaderAccept)
	return c.Accepts(jsonType, "text/csv") == "text/csv", nil
}

// sendCSV answers a small table (a history's points, a breakdown's rows,
// at most MaxPoints lines) as CSV, its header first.
func sendCSV(c *fiber.Ctx, header []string, rows [][]string) error {
	var b bytes.Buffer
	w := newCSV(&b)
	w.Write(header)
	w.WriteAll(rows) // a bytes.Buffer does not fail
	c.Set(fiber.HeaderContentType, csvType)
	return c.Send(b.Bytes())
}

// textCell is a text field (a name, a label's value) as a CSV cell: one
// that a spreadsheet would take for a formula (it starts with =, +, -, @,
// a tab or a carriage return) gets a leading ', as OWASP advises, because
// some of these texts come from visitors (a campaign of a page hit's URL).
// Numbers and times are written as they are.
func textCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// newCSV writes RFC 4180's CSV: lines end with CRLF.
func newCSV(w io.Writer) *csv.Writer {
	out := csv.NewWriter(w)
	out.UseCRLF = true
	return out
}
