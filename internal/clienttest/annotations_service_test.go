package clienttest

import (
	"encoding/csv"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/client"
	"github.com/countersvc/countersvc/internal/apptest"
)

// The client creates, lists and deletes annotations, asks for them beside
// a history and a breakdown, and reads the service's CSV back as records
// of the header's width.
func TestTheClientAnnotatesAndReadsCSV(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	c, ctx := newClient(t, svc.URL, client.Options{})
	if _, err := c.Increment(ctx, "books/Bulldozer", 3); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 4, 1, 7, 0, 0, 0, time.UTC)
	sale, err := c.CreateAnnotation(ctx, client.AnnotationRequest{Prefix: "books/", At: at, Text: "Spring sale"})
	if err != nil || sale.ID < 1 || sale.Prefix != "books/" || !sale.At.Equal(at) {
		t.Fatalf("CreateAnnotation: %+v %v", sale, err)
	}
	now, err := c.CreateAnnotation(ctx, client.AnnotationRequest{Name: "books/Bulldozer", Text: "Price cut"})
	if err != nil || now.Name != "books/Bulldozer" || time.Since(now.At) > time.Minute {
		t.Fatalf("CreateAnnotation: %+v %v", now, err)
	}
	if _, err := c.CreateAnnotation(ctx, client.AnnotationRequest{Name: "books/x", Prefix: "books/", Text: "both"}); !errors.Is(err, client.InvalidArgument) {
		t.Fatalf("both name and prefix: %v", err)
	}
	list, err := c.Annotations(ctx, "books/Bulldozer", client.AnnotationRange{})
	if err != nil || len(list) != 2 || list[0].ID != sale.ID || list[1].ID != now.ID {
		t.Fatalf("Annotations: %+v %v", list, err)
	}
	if list, err := c.PrefixAnnotations(ctx, "books/", client.AnnotationRange{To: at.Add(time.Hour)}); err != nil || len(list) != 1 {
		t.Fatalf("PrefixAnnotations to %s: %+v %v", at.Add(time.Hour), list, err)
	}
	h, err := c.History(ctx, "books/Bulldozer", client.HistoryOptions{Annotations: true})
	if err != nil || len(h.Annotations) != 1 || h.Annotations[0].Text != "Price cut" {
		t.Fatalf("History with annotations: %+v %v", h.Annotations, err)
	}
	b, err := c.PrefixBreakdown(ctx, "books/", client.ByName, client.BreakdownOptions{Annotations: true})
	if err != nil || len(b.Annotations) != 1 {
		t.Fatalf("PrefixBreakdown with annotations: %+v %v", b.Annotations, err)
	}
	if err := c.DeleteAnnotation(ctx, now.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAnnotation(ctx, now.ID); !errors.Is(err, client.NotFound) {
		t.Fatalf("a second DeleteAnnotation: %v", err)
	}

	var out strings.Builder
	if n, err := c.ExportCSV(ctx, "books/", &out); err != nil || n != 1 {
		t.Fatalf("ExportCSV: %d %v", n, err)
	}
	records, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(records) != 2 || records[1][0] != "books/Bulldozer" || records[1][1] != "3" {
		t.Fatalf("ExportCSV wrote %q (%v)", out.String(), err)
	}
	out.Reset()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	opts := client.HistoryOptions{From: time.Date(2025, 4, 1, 0, 0, 0, 0, berlin), To: time.Date(2025, 4, 2, 0, 0, 0, 0, berlin), TZ: "Europe/Berlin"}
	if err := c.PrefixHistoryCSV(ctx, "books/", opts, &out); err != nil {
		t.Fatal(err)
	}
	if want := "name,start,end,count\nbooks/,2025-04-01T00:00:00+02:00,2025-04-02T00:00:00+02:00,0\n"; out.String() != want {
		t.Fatalf("PrefixHistoryCSV wrote %q, want %q", out.String(), want)
	}
}
