package counters_test

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// fakeStore records what reaches the backend and answers as a store that
// accepts everything would. The service's rules are what is tested: the
// store behind it must see only validated requests.
type fakeStore struct {
	calls []string
	lines []counters.ImportLine
}

func (f *fakeStore) called(what string) { f.calls = append(f.calls, what) }

func (f *fakeStore) Increment(_ context.Context, name string, by int64) (int64, error) {
	f.called("Increment " + name)
	return by, nil
}
func (f *fakeStore) Get(_ context.Context, name string) (*counters.Counter, error) {
	f.called("Get " + name)
	return &counters.Counter{Name: name}, nil
}
func (f *fakeStore) Set(_ context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	f.called("Set " + req.Name)
	return &counters.Counter{Name: req.Name, Value: req.Value}, true, nil
}
func (f *fakeStore) Delete(_ context.Context, name string) error {
	f.called("Delete " + name)
	return nil
}
func (f *fakeStore) List(_ context.Context, lf counters.ListFilter) (*counters.Page, error) {
	f.called("List " + lf.Prefix)
	return &counters.Page{}, nil
}
func (f *fakeStore) Reset(_ context.Context, req counters.ResetRequest) (int64, error) {
	f.called("Reset " + req.Prefix)
	return 0, nil
}
func (f *fakeStore) Batch(_ context.Context, items []counters.Increment) ([]int64, error) {
	f.called("Batch")
	return make([]int64, len(items)), nil
}
func (f *fakeStore) IncrementMany(_ context.Context, incs []counters.Increment) ([]int64, error) {
	f.called("IncrementMany " + incs[0].Name)
	values := make([]int64, len(incs))
	for i, inc := range incs {
		values[i] = inc.By
	}
	return values, nil
}

// extra is an Extra of the tests' own kind.
type extra string

// onceStore is fakeStore with idempotent writes and imports.
type onceStore struct{ fakeStore }

func (f *onceStore) IncrementOnce(_ context.Context, _ counters.Idempotency, name string, by int64) (int64, bool, error) {
	f.called("IncrementOnce " + name)
	return by, false, nil
}
func (f *onceStore) SetOnce(_ context.Context, _ counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	f.called("SetOnce " + req.Name)
	return &counters.Counter{Name: req.Name}, true, false, nil
}
func (f *onceStore) BatchOnce(_ context.Context, _ counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	f.called("BatchOnce " + items[0].Name)
	values := make([]int64, len(items))
	for i, it := range items {
		values[i] = it.By
	}
	return values, false, nil
}
func (f *onceStore) Import(_ context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	f.called("Import")
	r := counters.NewImportReport(opts)
	for l := range lines {
		f.lines = append(f.lines, l)
		r.Read++
	}
	return r, nil
}
func (f *onceStore) Observe(...counters.Observer) {}

// Every request the service is given is checked before the store sees it:
// a bad one answers invalid_argument and reaches no store; a good one
// reaches the store once.
func TestTheServiceChecksEveryRequestBeforeTheStore(t *testing.T) {
	ctx := context.Background()
	key := counters.Idempotency{Key: "order-1"}
	badKey := counters.Idempotency{Key: ""}
	plus := []counters.Increment{{Name: "a", By: 1}}
	labels := extra("channel=web") // any comparable Extra: the service carries it unread
	tests := []struct {
		name string
		call func(counters.Service) error
		want string // the call the store sees; "" for none and invalid_argument, "-code" for none and code
	}{
		{"increment", func(s counters.Service) error { _, err := s.Increment(ctx, "a", 1); return err }, "Increment a"},
		{"increment of a bad name", func(s counters.Service) error { _, err := s.Increment(ctx, "", 1); return err }, ""},
		{"get", func(s counters.Service) error { _, err := s.Get(ctx, "a"); return err }, "Get a"},
		{"get of a bad name", func(s counters.Service) error { _, err := s.Get(ctx, "a\x00"); return err }, ""},
		{"set", func(s counters.Service) error { _, _, err := s.Set(ctx, counters.SetRequest{Name: "a"}); return err }, "Set a"},
		{"set with bounds that contradict", func(s counters.Service) error {
			_, _, err := s.Set(ctx, counters.SetRequest{Name: "a", Min: counters.Bound{Value: ptr(4)}, Max: counters.Bound{Value: ptr(3)}})
			return err
		}, ""},
		{"set outside the bounds it gives", func(s counters.Service) error {
			_, _, err := s.Set(ctx, counters.SetRequest{Name: "a", Value: 5, Max: counters.Bound{Value: ptr(4)}})
			return err
		}, "-" + counters.EOUTOFRANGE},
		{"delete", func(s counters.Service) error { return s.Delete(ctx, "a") }, "Delete a"},
		{"delete of a bad name", func(s counters.Service) error { return s.Delete(ctx, strings.Repeat("a", 256)) }, ""},
		{"list", func(s counters.Service) error { _, err := s.List(ctx, counters.ListFilter{Prefix: "p/"}); return err }, "List p/"},
		{"list with a bad limit", func(s counters.Service) error { _, err := s.List(ctx, counters.ListFilter{Limit: 1001}); return err }, ""},
		{"reset", func(s counters.Service) error {
			_, err := s.Reset(ctx, counters.ResetRequest{Prefix: "p/"})
			return err
		}, "Reset p/"},
		{"reset of nothing", func(s counters.Service) error { _, err := s.Reset(ctx, counters.ResetRequest{}); return err }, ""},
		{"batch", func(s counters.Service) error { _, err := s.Batch(ctx, plus); return err }, "Batch"},
		{"empty batch", func(s counters.Service) error { _, err := s.Batch(ctx, nil); return err }, ""},
		{"increment with labels", func(s counters.Service) error { _, err := s.IncrementWith(ctx, "a", 1, labels); return err }, "IncrementMany a"},
		{"increment with no extra is an increment", func(s counters.Service) error { _, err := s.IncrementWith(ctx, "a", 1, nil); return err }, "Increment a"},
		{"increment with labels of a bad name", func(s counters.Service) error { _, err := s.IncrementWith(ctx, "", 1, labels); return err }, ""},
		{"keyed increment", func(s counters.Service) error { _, _, err := s.IncrementOnce(ctx, key, "a", 1); return err }, "IncrementOnce a"},
		{"keyed increment with a bad key", func(s counters.Service) error { _, _, err := s.IncrementOnce(ctx, badKey, "a", 1); return err }, ""},
		{"keyed increment of a bad name", func(s counters.Service) error { _, _, err := s.IncrementOnce(ctx, key, "", 1); return err }, ""},
		{"keyed increment with labels is a batch of one", func(s counters.Service) error {
			_, _, err := s.IncrementWithOnce(ctx, key, "a", 1, labels)
			return err
		}, "BatchOnce a"},
		{"keyed increment with no extra", func(s counters.Service) error { _, _, err := s.IncrementWithOnce(ctx, key, "a", 1, nil); return err }, "IncrementOnce a"},
		{"keyed increment with labels and a bad key", func(s counters.Service) error {
			_, _, err := s.IncrementWithOnce(ctx, badKey, "a", 1, labels)
			return err
		}, ""},
		{"keyed set", func(s counters.Service) error {
			_, _, _, err := s.SetOnce(ctx, key, counters.SetRequest{Name: "a"})
			return err
		}, "SetOnce a"},
		{"keyed set with a bad key", func(s counters.Service) error {
			_, _, _, err := s.SetOnce(ctx, badKey, counters.SetRequest{Name: "a"})
			return err
		}, ""},
		{"keyed set of a bad name", func(s counters.Service) error { _, _, _, err := s.SetOnce(ctx, key, counters.SetRequest{}); return err }, ""},
		{"keyed batch", func(s counters.Service) error { _, _, err := s.BatchOnce(ctx, key, plus); return err }, "BatchOnce a"},
		{"keyed batch with a bad key", func(s counters.Service) error { _, _, err := s.BatchOnce(ctx, badKey, plus); return err }, ""},
		{"keyed empty batch", func(s counters.Service) error { _, _, err := s.BatchOnce(ctx, key, nil); return err }, ""},
		{"import", func(s counters.Service) error {
			_, err := s.Import(ctx, counters.ImportOptions{Mode: counters.ImportCreate}, slices.Values([]counters.ImportLine{}))
			return err
		}, "Import"},
		{"import in an unknown mode", func(s counters.Service) error {
			_, err := s.Import(ctx, counters.ImportOptions{Mode: "merge"}, slices.Values([]counters.ImportLine{}))
			return err
		}, ""},
		{"import with a bad key", func(s counters.Service) error {
			_, err := s.Import(ctx, counters.ImportOptions{Mode: counters.ImportOverwrite, Key: &badKey}, slices.Values([]counters.ImportLine{}))
			return err
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &onceStore{}
			err := tc.call(counters.NewService(counters.BackendOf(store)))
			if code, refused := strings.CutPrefix(tc.want, "-"); tc.want == "" || refused {
				if !refused {
					code = counters.EINVALID
				}
				wantCode(t, "the call", err, code)
				if len(store.calls) != 0 {
					t.Errorf("a bad request reached the store: %v", store.calls)
				}
				return
			}
			if err != nil {
				t.Fatalf("a good request failed: %v", err)
			}
			if len(store.calls) != 1 || store.calls[0] != tc.want {
				t.Errorf("the store saw %v, want [%s]", store.calls, tc.want)
			}
		})
	}
}

// A backend without idempotent writes or imports is a wiring mistake: the
// service says so as an internal error once the request itself is valid.
func TestABackendWithoutOnceOrImportsFailsAsInternal(t *testing.T) {
	ctx := context.Background()
	key := counters.Idempotency{Key: "k"}
	store := &fakeStore{}
	b := counters.BackendOf(store)
	if b.Once != nil || b.Imports != nil || b.Observe != nil {
		t.Fatalf("BackendOf found rules the store does not have: %+v", b)
	}
	s := counters.NewService(b)
	calls := map[string]func() error{
		"IncrementOnce": func() error { _, _, err := s.IncrementOnce(ctx, key, "a", 1); return err },
		"IncrementWithOnce": func() error {
			_, _, err := s.IncrementWithOnce(ctx, key, "a", 1, extra("a=b"))
			return err
		},
		"SetOnce":   func() error { _, _, _, err := s.SetOnce(ctx, key, counters.SetRequest{Name: "a"}); return err },
		"BatchOnce": func() error { _, _, err := s.BatchOnce(ctx, key, []counters.Increment{{Name: "a"}}); return err },
		"Import": func() error {
			_, err := s.Import(ctx, counters.ImportOptions{Mode: counters.ImportCreate}, slices.Values([]counters.ImportLine{}))
			return err
		},
	}
	for name, call := range calls {
		wantCode(t, name, call(), counters.EINTERNAL)
	}
	if len(store.calls) != 0 {
		t.Errorf("the store saw %v", store.calls)
	}
	if full := counters.BackendOf(&onceStore{}); full.Once == nil || full.Imports == nil || full.Observe == nil {
		t.Errorf("BackendOf missed the store's own rules: %+v", full)
	}
}

// The service refuses import lines that could not be set through the API
// and hands them to the store refused, with a reason whose code is the
// one the same change would get on its own.
func TestImportLinesAreCheckedAsTheAPIChecksAChange(t *testing.T) {
	old := time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		line   counters.ImportLine
		reason string
	}{
		{"a plain counter", counters.ImportLine{Counter: counters.Counter{Name: "a", Value: 3}}, ""},
		{"created long ago but within MySQL's range", counters.ImportLine{Counter: counters.Counter{Name: "a", CreatedAt: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)}}, ""},
		{"an empty name", counters.ImportLine{Counter: counters.Counter{Name: ""}}, counters.ReasonName},
		{"a reserved name", counters.ImportLine{Counter: counters.Counter{Name: "_tickets/x"}}, counters.ReasonReserved},
		{"bounds that contradict", counters.ImportLine{Counter: counters.Counter{Name: "a", Min: ptr(5), Max: ptr(1)}}, counters.ReasonBounds},
		{"a value outside its bounds", counters.ImportLine{Counter: counters.Counter{Name: "a", Value: 9, Max: ptr(1)}}, counters.ReasonOutOfRange},
		{"created before the year 1000", counters.ImportLine{Counter: counters.Counter{Name: "a", CreatedAt: old}}, counters.ReasonMalformed},
		{"created after 9999", counters.ImportLine{Counter: counters.Counter{Name: "a", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}, counters.ReasonMalformed},
		{"refused already by the reader", counters.ImportLine{Reason: counters.ReasonMalformed, Message: "not JSON"}, counters.ReasonMalformed},
	}
	var lines []counters.ImportLine
	for i, tc := range tests {
		tc.line.Line = int64(i + 1)
		lines = append(lines, tc.line)
	}
	store := &onceStore{}
	s := counters.NewService(counters.BackendOf(store))
	r, err := s.Import(context.Background(), counters.ImportOptions{Mode: counters.ImportCreate}, slices.Values(lines))
	if err != nil || r.Read != int64(len(tests)) {
		t.Fatalf("import: %v, report %+v", err, r)
	}
	for i, tc := range tests {
		got := store.lines[i]
		if got.Reason != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.name, got.Reason, tc.reason)
		}
		if tc.reason != "" && got.Message == "" {
			t.Errorf("%s: refused without a message", tc.name)
		}
	}
	if got := store.lines[len(tests)-1].Message; got != "not JSON" {
		t.Errorf("a line the reader refused got a new message: %q", got)
	}
}

// An import's report counts every skipped and refused line and names the
// first thousand; an atomic import that refused fails with the first
// refusal's code, or permission_denied when any line was outside the
// caller's rights.
func TestAnImportReportCountsNamesAndFails(t *testing.T) {
	line := func(n int64, name, reason string) counters.ImportLine {
		return counters.ImportLine{Line: n, Counter: counters.Counter{Name: name}, Reason: reason, Message: reason}
	}
	t.Run("the codes of an atomic import", func(t *testing.T) {
		tests := []struct {
			name    string
			atomic  bool
			reasons []string
			want    string
		}{
			{"nothing refused", true, nil, ""},
			{"not atomic", false, []string{counters.ReasonName}, ""},
			{"a bad name", true, []string{counters.ReasonName}, counters.EINVALID},
			{"out of range first", true, []string{counters.ReasonOutOfRange, counters.ReasonName}, counters.EOUTOFRANGE},
			{"permission wins", true, []string{counters.ReasonName, counters.ReasonPermission, counters.ReasonOutOfRange}, counters.EPERMISSION},
			{"reserved is permission", true, []string{counters.ReasonBounds, counters.ReasonReserved}, counters.EPERMISSION},
		}
		for _, tc := range tests {
			r := counters.NewImportReport(counters.ImportOptions{Mode: counters.ImportCreate, Atomic: tc.atomic})
			for i, reason := range tc.reasons {
				r.Read++
				r.Refuse(line(int64(i+1), "a", reason))
			}
			err := r.Err()
			wantCode(t, tc.name, err, tc.want)
			if err != nil && !strings.Contains(counters.ErrorMessage(err), "nothing was imported") {
				t.Errorf("%s: message %q", tc.name, counters.ErrorMessage(err))
			}
		}
	})
	t.Run("lines named up to the limit", func(t *testing.T) {
		r := counters.NewImportReport(counters.ImportOptions{Mode: counters.ImportCreate})
		for i := range counters.MaxReportedLines + 5 {
			if i%2 == 0 {
				r.Skip(line(int64(i+1), "a", ""))
			} else {
				r.Refuse(line(int64(i+1), "b", counters.ReasonName))
			}
		}
		if r.Skipped+r.Refused != counters.MaxReportedLines+5 || len(r.Lines) != counters.MaxReportedLines || !r.Truncated {
			t.Fatalf("skipped %d, refused %d, named %d, truncated %v", r.Skipped, r.Refused, len(r.Lines), r.Truncated)
		}
		first := r.Lines[0]
		if first.Line != 1 || first.Name != "a" || first.Outcome != "skipped" || first.Reason != counters.ReasonExists {
			t.Errorf("first line %+v", first)
		}
		if second := r.Lines[1]; second.Outcome != "refused" || second.Reason != counters.ReasonName {
			t.Errorf("second line %+v", second)
		}
	})
	t.Run("a bad name is not echoed", func(t *testing.T) {
		r := counters.NewImportReport(counters.ImportOptions{Mode: counters.ImportCreate})
		r.Refuse(line(1, strings.Repeat("x", 300), counters.ReasonName))
		if r.Lines[0].Name != "" {
			t.Errorf("named %q", r.Lines[0].Name)
		}
	})
	t.Run("merged chunks", func(t *testing.T) {
		a := counters.NewImportReport(counters.ImportOptions{Mode: counters.ImportOverwrite})
		a.Read, a.Created, a.Overwritten = 10, 4, 3
		for i := range counters.MaxReportedLines - 1 {
			a.Refuse(line(int64(i), "a", counters.ReasonName))
		}
		b := counters.NewImportReport(counters.ImportOptions{Mode: counters.ImportOverwrite})
		b.Read, b.Created, b.Overwritten = 5, 1, 2
		b.Skip(line(2000, "x", ""))
		b.Refuse(line(2001, "y", counters.ReasonBounds))
		a.Merge(b)
		if a.Read != 15 || a.Created != 5 || a.Overwritten != 5 || a.Skipped != 1 || a.Refused != counters.MaxReportedLines {
			t.Errorf("merged counts %+v", a)
		}
		if len(a.Lines) != counters.MaxReportedLines || !a.Truncated || a.Lines[len(a.Lines)-1].Line != 2000 {
			t.Errorf("merged %d lines, truncated %v, last %+v", len(a.Lines), a.Truncated, a.Lines[len(a.Lines)-1])
		}
	})
}
