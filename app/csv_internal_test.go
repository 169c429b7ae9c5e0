package app

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// A CSV export cut by a failure ends with its error line, which a reader
// holding records to the header's width refuses, so that the cut file is
// never taken for the whole; the lines before it read as written.
func TestACutCSVExportEndsWithALineACSVReaderRefuses(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	lines := csvLines(w)
	at := time.Date(2025, 4, 1, 9, 0, 0, 0, time.UTC)
	if err := lines.counter(&counters.Counter{Name: "a, \"quoted\"", Value: -3, CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	lines.flush()
	lines.fail(counters.Errorf(counters.EUNAVAILABLE, "The database cannot be reached; nothing was changed."))
	w.Flush()

	r := csv.NewReader(&b)
	for _, want := range [][]string{{"name", "value", "created_at", "updated_at"}, {"a, \"quoted\"", "-3", "2025-04-01T09:00:00Z", "2025-04-01T09:00:00Z"}} {
		rec, err := r.Read()
		if err != nil || len(rec) != 4 || rec[0] != want[0] || rec[1] != want[1] || rec[2] != want[2] {
			t.Fatalf("read %q (%v), want %q", rec, err, want)
		}
	}
	rec, err := r.Read()
	if !errors.Is(err, csv.ErrFieldCount) || len(rec) != 1 || rec[0] != "error: unavailable: The database cannot be reached; nothing was changed." {
		t.Fatalf("the last line read %q (%v), want the error line refused for its width", rec, err)
	}
}

func TestATextThatLooksLikeAFormulaGetsALeadingQuote(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(1)": "'=HYPERLINK(1)", "+1": "'+1", "-x": "'-x", "@SUM": "'@SUM", "\tx": "'\tx",
		"web": "web", "": "", "a=b": "a=b", "(none)": "(none)",
	} {
		if got := textCell(in); got != want {
			t.Errorf("textCell(%q) = %q, want %q", in, got, want)
		}
	}
}
