package counters_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/counters"
)

func ptr(v int64) *int64 { return &v }

// wantCode fails the test unless err has the code want ("" for no error).
func wantCode(t *testing.T, what string, err error, want string) {
	t.Helper()
	if got := counters.ErrorCode(err); got != want {
		t.Errorf("%s: code %q (%v), want %q", what, got, err, want)
	}
}

// A name is 1 to 255 bytes of valid UTF-8 without control characters;
// anything else printable, slashes and spaces included, is a name.
func TestNamesAreOneTo255BytesOfPrintableUTF8(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"pages/home", true},
		{"a", true},
		{" spaced out ", true},
		{"Besucher überall 🎉", true},
		{strings.Repeat("x", 255), true},
		{strings.Repeat("é", 127), true}, // 254 bytes
		{strings.Repeat("é", 128), false},
		{strings.Repeat("x", 256), false},
		{"", false},
		{"tab\there", false},
		{"new\nline", false},
		{"nul\x00", false},
		{"del\x7f", false},
		{"\xff\xfe", false},
	}
	for _, tc := range tests {
		err := counters.ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%.20q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil {
			wantCode(t, "ValidateName", err, counters.EINVALID)
			if strings.Contains(counters.ErrorMessage(err), tc.name) && tc.name != "" {
				t.Errorf("the message echoes the bad name: %q", counters.ErrorMessage(err))
			}
		}
	}
}

// Add never wraps around: a sum outside int64 is refused, whichever the
// signs.
func TestAddRefusesWhatLeavesInt64(t *testing.T) {
	tests := []struct {
		value, by, want int64
		ok              bool
	}{
		{1, 2, 3, true},
		{5, -7, -2, true},
		{0, 0, 0, true},
		{math.MaxInt64 - 1, 1, math.MaxInt64, true},
		{math.MaxInt64, 1, 0, false},
		{math.MaxInt64, math.MaxInt64, 0, false},
		{math.MinInt64 + 1, -1, math.MinInt64, true},
		{math.MinInt64, -1, 0, false},
		{math.MinInt64, math.MaxInt64, -1, true},
		{math.MaxInt64, math.MinInt64, -1, true},
		{-1, math.MinInt64, 0, false},
	}
	for _, tc := range tests {
		got, ok := counters.Add(tc.value, tc.by)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("Add(%d, %d) = %d, %v; want %d, %v", tc.value, tc.by, got, ok, tc.want, tc.ok)
		}
	}
}

// Bounds that contradict themselves are invalid input; a value outside
// sound bounds is out of range. Either bound may be absent.
func TestBoundsAreCheckedBeforeTheValue(t *testing.T) {
	tests := []struct {
		name     string
		value    int64
		min, max *int64
		want     string
	}{
		{"unbounded", -5, nil, nil, ""},
		{"inside", 5, ptr(0), ptr(10), ""},
		{"at the min", 0, ptr(0), ptr(10), ""},
		{"at the max", 10, ptr(0), ptr(10), ""},
		{"min equal to max", 3, ptr(3), ptr(3), ""},
		{"below the min", -1, ptr(0), nil, counters.EOUTOFRANGE},
		{"above the max", 11, nil, ptr(10), counters.EOUTOFRANGE},
		{"min above max", 5, ptr(10), ptr(0), counters.EINVALID},
		{"min above max wins over a value outside", 50, ptr(10), ptr(0), counters.EINVALID},
	}
	for _, tc := range tests {
		c := counters.Counter{Value: tc.value, Min: tc.min, Max: tc.max}
		wantCode(t, tc.name, c.CheckBounds(), tc.want)
	}
}

// A set checks its name and the bounds it gives; a bound it keeps is the
// store's to check, with the change.
func TestASetRequestChecksItsNameAndTheBoundsItGives(t *testing.T) {
	tests := []struct {
		name string
		req  counters.SetRequest
		want string
	}{
		{"plain", counters.SetRequest{Name: "a", Value: 5}, ""},
		{"bad name", counters.SetRequest{Name: "", Value: 5}, counters.EINVALID},
		{"inside given bounds", counters.SetRequest{Name: "a", Value: 5, Min: counters.Bound{Value: ptr(0)}, Max: counters.Bound{Value: ptr(9)}}, ""},
		{"below a given min", counters.SetRequest{Name: "a", Value: -1, Min: counters.Bound{Value: ptr(0)}}, counters.EOUTOFRANGE},
		{"above a given max", counters.SetRequest{Name: "a", Value: 10, Max: counters.Bound{Value: ptr(9)}}, counters.EOUTOFRANGE},
		{"a kept min is not checked here", counters.SetRequest{Name: "a", Value: -1, Min: counters.Bound{Keep: true, Value: ptr(0)}}, ""},
		{"a kept max is not checked here", counters.SetRequest{Name: "a", Value: 10, Max: counters.Bound{Keep: true, Value: ptr(9)}}, ""},
		{"given bounds that contradict", counters.SetRequest{Name: "a", Value: 5, Min: counters.Bound{Value: ptr(9)}, Max: counters.Bound{Value: ptr(0)}}, counters.EINVALID},
		{"a nil bound unbounds", counters.SetRequest{Name: "a", Value: math.MinInt64, Min: counters.Bound{}}, ""},
	}
	for _, tc := range tests {
		wantCode(t, tc.name, tc.req.Validate(), tc.want)
	}
}

// A listing's limit defaults to 100 and lies between 1 and 1000; its
// prefix and cursor follow the rules of a name.
func TestAListingFilterIsNormalized(t *testing.T) {
	tests := []struct {
		name      string
		f         counters.ListFilter
		want      string
		wantLimit int
	}{
		{"the default limit", counters.ListFilter{}, "", counters.DefaultListLimit},
		{"one", counters.ListFilter{Limit: 1}, "", 1},
		{"the most", counters.ListFilter{Limit: counters.MaxListLimit}, "", counters.MaxListLimit},
		{"too many", counters.ListFilter{Limit: counters.MaxListLimit + 1}, counters.EINVALID, 0},
		{"negative", counters.ListFilter{Limit: -1}, counters.EINVALID, 0},
		{"prefix and cursor", counters.ListFilter{Prefix: "shop/", After: "shop/b"}, "", counters.DefaultListLimit},
		{"a prefix with a control character", counters.ListFilter{Prefix: "a\x01"}, counters.EINVALID, 0},
		{"a cursor too long", counters.ListFilter{After: strings.Repeat("a", 256)}, counters.EINVALID, 0},
	}
	for _, tc := range tests {
		err := tc.f.Normalize()
		wantCode(t, tc.name, err, tc.want)
		if err == nil && tc.f.Limit != tc.wantLimit {
			t.Errorf("%s: limit %d, want %d", tc.name, tc.f.Limit, tc.wantLimit)
		}
	}
	// The message says which field is wrong.
	f := counters.ListFilter{After: "a\x01"}
	if msg := counters.ErrorMessage(f.Normalize()); !strings.HasPrefix(msg, "after: ") {
		t.Errorf("cursor error %q does not name the field", msg)
	}
}

// A reset selects by a prefix or by all, never both and never neither.
func TestAResetSelectsByAPrefixOrAll(t *testing.T) {
	tests := []struct {
		name string
		req  counters.ResetRequest
		want string
	}{
		{"a prefix", counters.ResetRequest{Prefix: "sales/"}, ""},
		{"all", counters.ResetRequest{All: true, Value: 7}, ""},
		{"neither", counters.ResetRequest{}, counters.EINVALID},
		{"both", counters.ResetRequest{Prefix: "sales/", All: true}, counters.EINVALID},
		{"a bad prefix", counters.ResetRequest{Prefix: "\x7f"}, counters.EINVALID},
	}
	for _, tc := range tests {
		wantCode(t, tc.name, tc.req.Validate(), tc.want)
	}
}

// A batch carries 1 to 100 increments with valid names; the error names
// the first bad item and keeps its name out of the message when the name
// is bad.
func TestABatchCarriesOneToAHundredValidItems(t *testing.T) {
	items := func(n int) []counters.Increment {
		out := make([]counters.Increment, n)
		for i := range out {
			out[i] = counters.Increment{Name: "b", By: 1}
		}
		return out
	}
	withBad := func(i int, name string) []counters.Increment {
		out := items(5)
		out[i].Name = name
		return out
	}
	tests := []struct {
		name    string
		items   []counters.Increment
		want    string
		message string
	}{
		{"one", items(1), "", ""},
		{"the most", items(counters.MaxBatch), "", ""},
		{"none", nil, counters.EINVALID, "A batch carries 1 to 100 increments, not 0."},
		{"too many", items(counters.MaxBatch + 1), counters.EINVALID, "A batch carries 1 to 100 increments, not 101."},
		{"an empty name", withBad(2, ""), counters.EINVALID, "increments[2]: Counter name must not be empty."},
		{"a control character", withBad(4, "a\nb"), counters.EINVALID, "increments[4]: Counter name must not contain control characters."},
		{"the same name twice is fine", append(items(2), counters.Increment{Name: "b", By: -3}), "", ""},
	}
	for _, tc := range tests {
		err := counters.ValidateBatch(tc.items)
		wantCode(t, tc.name, err, tc.want)
		if tc.message != "" && counters.ErrorMessage(err) != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, counters.ErrorMessage(err), tc.message)
		}
	}
}

// Only a counters.Error's code and message reach a client: anything else
// is an internal error with a generic message, and an internal Error's
// own message (which may hold a cause's text) is not shown either.
func TestOnlyAnErrorsCodeAndMessageAreShown(t *testing.T) {
	sqlErr := errors.New("Error 1213: Deadlock found when trying to get lock")
	wrapped := counters.Wrap(counters.EUNAVAILABLE, "storage.Increment", sqlErr, "MySQL is unreachable; nothing was changed.")
	tests := []struct {
		name        string
		err         error
		code, msg   string
		errorString string
	}{
		{"nil", nil, "", "", ""},
		{"an Error", counters.Errorf(counters.ENOTFOUND, "No counter %q.", "x"), counters.ENOTFOUND, `No counter "x".`, `not_found: No counter "x".`},
		{"a wrapped cause", wrapped, counters.EUNAVAILABLE, "MySQL is unreachable; nothing was changed.",
			"storage.Increment: unavailable: MySQL is unreachable; nothing was changed.: Error 1213: Deadlock found when trying to get lock"},
		{"an Error deeper in the chain", errors.Join(errors.New("context"), counters.Errorf(counters.ECONFLICT, "Taken.")), counters.ECONFLICT, "Taken.", ""},
		{"a plain error", sqlErr, counters.EINTERNAL, "An internal error has occurred.", ""},
		{"an internal Error", counters.Errorf(counters.EINTERNAL, "table counter is missing"), counters.EINTERNAL, "An internal error has occurred.", ""},
	}
	for _, tc := range tests {
		if got := counters.ErrorCode(tc.err); got != tc.code {
			t.Errorf("%s: code %q, want %q", tc.name, got, tc.code)
		}
		if got := counters.ErrorMessage(tc.err); got != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, got, tc.msg)
		}
		if tc.errorString != "" && tc.err.Error() != tc.errorString {
			t.Errorf("%s: Error() %q, want %q", tc.name, tc.err.Error(), tc.errorString)
		}
	}
	if !errors.Is(wrapped, sqlErr) {
		t.Error("Wrap does not keep its cause in the chain")
	}
}

// The longest common prefix of names is cut back to whole characters, so
// that an observer told of it by prefix gets valid UTF-8.
func TestCommonPrefixKeepsWholeCharacters(t *testing.T) {
	tests := []struct {
		p, name string
		seen    bool
		want    string
	}{
		{"", "shop/a", false, "shop/a"},
		{"shop/a", "shop/b", true, "shop/"},
		{"shop/a", "shop/a", true, "shop/a"},
		{"shop/abc", "shop/ab", true, "shop/ab"},
		{"shop/a", "other", true, ""},
		{"", "x", true, ""},
		{"café", "cafè", true, "caf"}, // é and è share their first byte
		{"日本", "日曜", true, "日"},
	}
	for _, tc := range tests {
		if got := counters.CommonPrefix(tc.p, tc.name, tc.seen); got != tc.want {
			t.Errorf("CommonPrefix(%q, %q, %v) = %q, want %q", tc.p, tc.name, tc.seen, got, tc.want)
		}
	}
}

// Wanted keeps the changes an observer wants, in order, and hands back
// the slice itself when it wants them all.
func TestWantedKeepsTheWantedChangesInOrder(t *testing.T) {
	changes := []counters.Change{{Name: "a/1"}, {Name: "b/1"}, {Name: "a/2"}, {Name: "b/2"}, {Name: "a/3"}}
	names := func(cs []counters.Change) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name  string
		wants func(string) bool
		want  string
	}{
		{"all", func(string) bool { return true }, "a/1,b/1,a/2,b/2,a/3"},
		{"none", func(string) bool { return false }, ""},
		{"by prefix", func(n string) bool { return strings.HasPrefix(n, "a/") }, "a/1,a/2,a/3"},
		{"all but the first", func(n string) bool { return n != "a/1" }, "b/1,a/2,b/2,a/3"},
		{"only the last", func(n string) bool { return n == "a/3" }, "a/3"},
	}
	for _, tc := range tests {
		if got := names(counters.Wanted(changes, tc.wants)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := counters.Wanted(changes, func(string) bool { return true }); &got[0] != &changes[0] {
		t.Error("wanting every change copied them")
	}
	if got := names(changes); got != "a/1,b/1,a/2,b/2,a/3" {
		t.Errorf("Wanted changed its argument: %s", got)
	}
}
