package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/annotations"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
)

func newAnnotationStore(t *testing.T) (*storage.AnnotationStore, *storage.CounterStore) {
	t.Helper()
	store, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	return storage.NewAnnotationStore(db), store
}

func annotate(t *testing.T, s *storage.AnnotationStore, target string, isPrefix bool, at time.Time, text string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := &annotations.Annotation{Target: target, IsPrefix: isPrefix, At: at, Text: text, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if err := s.CreateAnnotation(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID < 1 {
		t.Fatalf("annotation %q got id %d", text, a.ID)
	}
	return a.ID
}

func texts(list []annotations.Annotation) []string {
	out := []string{}
	for _, a := range list {
		out = append(out, a.Text)
	}
	return out
}

// A name sees its own annotations and those of the prefixes that hold
// it; a prefix sees its own, those of the prefixes that hold it and those
// of the names under it; neither sees a sibling's, a longer prefix's or a
// look-alike's (LIKE's % and _ are plain characters in a name), and each
// list is in order of at, within [from, to).
func TestAnnotationsAreThoseOfTheNameThePrefixesHoldingItAndTheNamesUnderAPrefix(t *testing.T) {
	t.Parallel()
	s, _ := newAnnotationStore(t)
	day := time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }
	annotate(t, s, "shop/books/Bulldozer", false, at(5), "name")
	annotate(t, s, "shop/", true, at(3), "shop prefix")
	annotate(t, s, "shop/books/", true, at(4), "books prefix")
	annotate(t, s, "shop/books/Bulldozer", true, at(1), "the name as a prefix")
	annotate(t, s, "shop/books/Bulldozer 2", false, at(2), "a longer name")
	annotate(t, s, "shop/books/Bulldozer/x", true, at(6), "a longer prefix")
	annotate(t, s, "shop/toys/", true, at(7), "a sibling prefix")
	annotate(t, s, "shop/books/Red", false, at(8), "another book")
	annotate(t, s, "shop_books/x", false, at(9), "a look-alike")
	annotate(t, s, "sh", true, at(10), "a prefix in the middle of a word")

	for _, tc := range []struct {
		name string
		q    annotations.Query
		want []string
	}{
		{"a name", annotations.Query{Target: "shop/books/Bulldozer"},
			[]string{"the name as a prefix", "shop prefix", "books prefix", "name", "a prefix in the middle of a word"}},
		{"a prefix", annotations.Query{Target: "shop/books/", IsPrefix: true},
			[]string{"the name as a prefix", "a longer name", "shop prefix", "books prefix", "name", "a longer prefix", "another book", "a prefix in the middle of a word"}},
		{"a prefix with % and _", annotations.Query{Target: "shop_", IsPrefix: true},
			[]string{"a look-alike", "a prefix in the middle of a word"}},
		{"a range", annotations.Query{Target: "shop/books/Bulldozer", From: at(3), To: at(5)},
			[]string{"shop prefix", "books prefix"}},
		{"from only", annotations.Query{Target: "shop/books/Bulldozer", From: at(5)},
			[]string{"name", "a prefix in the middle of a word"}},
		{"nothing", annotations.Query{Target: "elsewhere"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			list, err := s.Annotations(ctx, tc.q, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(list); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// An annotation comes back as it went in (a 280-character text of
// four-byte characters included), is deleted once, and a second delete
// or a read of it is not_found; a list stops at its limit.
func TestAnAnnotationIsKeptWholeAndDeletedOnce(t *testing.T) {
	t.Parallel()
	s, _ := newAnnotationStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	long := ""
	for range annotations.MaxText {
		long += "🚀"
	}
	at := time.Date(2025, 4, 1, 9, 30, 0, 123456000, time.UTC)
	id := annotate(t, s, "kept/whole", false, at, long)
	a, err := s.Annotation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != long || !a.At.Equal(at) || a.Target != "kept/whole" || a.IsPrefix || a.CreatedAt.IsZero() {
		t.Fatalf("read back %+v", a)
	}
	annotate(t, s, "kept/whole", false, at.Add(time.Second), "second")
	if list, err := s.Annotations(ctx, annotations.Query{Target: "kept/whole"}, 1); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("limit 1: %v %v", list, err)
	}
	if err := s.DeleteAnnotation(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAnnotation(ctx, id); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Annotation(ctx, id); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("read after delete: %v", err)
	}
}

// A counter's deletion leaves the annotations on its name: they belong to
// the name, which may be counted again (docs/annotations.md).
func TestDeletingACounterLeavesItsAnnotations(t *testing.T) {
	t.Parallel()
	s, store := newAnnotationStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := store.Increment(ctx, "deleted/counter", 1); err != nil {
		t.Fatal(err)
	}
	annotate(t, s, "deleted/counter", false, time.Now().UTC(), "launch")
	if err := store.Delete(ctx, "deleted/counter"); err != nil {
		t.Fatal(err)
	}
	list, err := s.Annotations(ctx, annotations.Query{Target: "deleted/counter"}, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("after the counter's deletion: %v %v", list, err)
	}
}
