package annotations_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/annotations"
	"github.com/countersvc/countersvc/counters"
)

func TestACreateRequestIsCheckedBeforeItIsKept(t *testing.T) {
	at := time.Date(2025, 4, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    annotations.CreateRequest
		want string // the error code; "" for none
	}{
		{"a name", annotations.CreateRequest{Name: "books/x", Text: "price cut"}, ""},
		{"a prefix with a moment", annotations.CreateRequest{Prefix: "books/", At: at, Text: "sale"}, ""},
		{"280 characters of four bytes", annotations.CreateRequest{Name: "a", Text: strings.Repeat("🚀", 280)}, ""},
		{"281 characters", annotations.CreateRequest{Name: "a", Text: strings.Repeat("é", 281)}, counters.EINVALID},
		{"empty text", annotations.CreateRequest{Name: "a"}, counters.EINVALID},
		{"blank text", annotations.CreateRequest{Name: "a", Text: "  "}, counters.EINVALID},
		{"a line break", annotations.CreateRequest{Name: "a", Text: "two\nlines"}, counters.EINVALID},
		{"not UTF-8", annotations.CreateRequest{Name: "a", Text: "\xff"}, counters.EINVALID},
		{"both name and prefix", annotations.CreateRequest{Name: "a", Prefix: "a", Text: "x"}, counters.EINVALID},
		{"neither name nor prefix", annotations.CreateRequest{Text: "x"}, counters.EINVALID},
		{"a bad name", annotations.CreateRequest{Name: "a\x01", Text: "x"}, counters.EINVALID},
		{"a name too long", annotations.CreateRequest{Name: strings.Repeat("n", 256), Text: "x"}, counters.EINVALID},
		{"a moment before 1970", annotations.CreateRequest{Name: "a", Text: "x", At: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}, counters.EINVALID},
		{"a reserved name", annotations.CreateRequest{Name: "_tickets/board/1", Text: "x"}, counters.EPERMISSION},
		{"a reserved prefix", annotations.CreateRequest{Prefix: "_", Text: "x"}, counters.EPERMISSION},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if got := codeOf(err); got != tc.want {
				t.Fatalf("got %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestAQueryReadsItsRangeAsHistoryDoes(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, tc := range []struct {
		name     string
		r        annotations.QueryRequest
		want     annotations.Query
		wantCode string
	}{
		{"a name, open", annotations.QueryRequest{Name: "a"}, annotations.Query{Target: "a"}, ""},
		{"a prefix, dates in a zone", annotations.QueryRequest{Prefix: "p/", From: "2025-04-01", To: "2025-05", Zone: "Europe/Berlin"},
			annotations.Query{Target: "p/", IsPrefix: true, From: time.Date(2025, 4, 1, 0, 0, 0, 0, berlin), To: time.Date(2025, 5, 1, 0, 0, 0, 0, berlin)}, ""},
		{"RFC 3339 with its + as a space", annotations.QueryRequest{Name: "a", From: "2025-04-01T09:00:00 02:00"},
			annotations.Query{Target: "a", From: time.Date(2025, 4, 1, 7, 0, 0, 0, time.UTC)}, ""},
		{"from not before to", annotations.QueryRequest{Name: "a", From: "2025-04-02", To: "2025-04-01"}, annotations.Query{}, counters.EINVALID},
		{"a bad time", annotations.QueryRequest{Name: "a", To: "tomorrow"}, annotations.Query{}, counters.EINVALID},
		{"an unknown zone", annotations.QueryRequest{Name: "a", Zone: "Mars/Olympus"}, annotations.Query{}, counters.EINVALID},
		{"neither", annotations.QueryRequest{}, annotations.Query{}, counters.EINVALID},
		{"both", annotations.QueryRequest{Name: "a", Prefix: "a"}, annotations.Query{}, counters.EINVALID},
		{"a reserved name reads", annotations.QueryRequest{Name: "_tickets/board/1"}, annotations.Query{Target: "_tickets/board/1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.r.Parse()
			if got := codeOf(err); got != tc.wantCode {
				t.Fatalf("got %q (%v), want %q", got, err, tc.wantCode)
			}
			if err == nil && (q.Target != tc.want.Target || q.IsPrefix != tc.want.IsPrefix || !q.From.Equal(tc.want.From) || !q.To.Equal(tc.want.To)) {
				t.Fatalf("got %+v, want %+v", q, tc.want)
			}
		})
	}
}

func TestHoldersAreTheCutsAtCharacterEnds(t *testing.T) {
	if got, want := annotations.Holders("ab/é"), []string{"a", "ab", "ab/", "ab/é"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// fakeStore keeps what it is given, for the service's own rules.
type fakeStore struct {
	kept []annotations.Annotation
	n    int
}

func (f *fakeStore) CreateAnnotation(_ context.Context, a *annotations.Annotation) error {
	a.ID = int64(len(f.kept) + 1)
	f.kept = append(f.kept, *a)
	return nil
}
func (f *fakeStore) Annotation(context.Context, int64) (*annotations.Annotation, error) {
	return nil, nil
}
func (f *fakeStore) Annotations(_ context.Context, _ annotations.Query, limit int) ([]annotations.Annotation, error) {
	out := make([]annotations.Annotation, min(f.n, limit))
	return out, nil
}
func (f *fakeStore) DeleteAnnotation(context.Context, int64) error { return nil }

// An annotation without a moment stands at the service's now; a refused
// one is never handed to the store; a list says when it stopped at
// MaxList.
func TestTheServiceStampsNowKeepsNothingRefusedAndSaysWhenAListIsCut(t *testing.T) {
	now := time.Date(2025, 4, 1, 9, 0, 0, 123456789, time.UTC)
	store := &fakeStore{}
	s := annotations.NewService(store, func() time.Time { return now })
	a, err := s.Create(context.Background(), annotations.CreateRequest{Prefix: "p/", Text: "launch"})
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Truncate(time.Microsecond); !a.At.Equal(want) || !a.CreatedAt.Equal(want) || !a.IsPrefix || a.Target != "p/" {
		t.Fatalf("created %+v", a)
	}
	if _, err := s.Create(context.Background(), annotations.CreateRequest{Name: "a", Text: ""}); codeOf(err) != counters.EINVALID {
		t.Fatalf("empty text: %v", err)
	}
	if len(store.kept) != 1 {
		t.Fatalf("the store was given %d annotations, want 1", len(store.kept))
	}
	for _, n := range []int{annotations.MaxList, annotations.MaxList + 5} {
		store.n = n
		list, truncated, err := s.List(context.Background(), annotations.Query{Target: "a"})
		if err != nil || len(list) != annotations.MaxList || truncated != (n > annotations.MaxList) {
			t.Fatalf("%d kept: %d listed, truncated %v, %v", n, len(list), truncated, err)
		}
	}
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	return counters.ErrorCode(err)
}
