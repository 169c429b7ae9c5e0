package app

import (
	"encoding/json"
	"math"
	"testing"
	"testing/quick"
)

func TestValueJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	names := []string{"", "a", `q"uote`, `back\slash`, "<script>&amp;", "tab\there", "nl\n", "bs\b ff\f cr\r", "\x00\x1f\x7f", "é日本🎉",
		"\u2028\u2029", "bad\xffutf8", "docs/index.html"}
	values := []int64{0, 1, -1, math.MaxInt64, math.MinInt64}
	check := func(name string, v int64) bool {
		want, _ := json.Marshal(valueJSON{Name: name, Value: v})
		got := appendValueJSON(nil, name, v)
		if string(got) != string(want) {
			t.Errorf("name %q: got %s, want %s", name, got, want)
			return false
		}
		return true
	}
	for b := 0; b < 0x80; b++ {
		names = append(names, "x"+string(rune(b))+"y")
	}
	for _, n := range names {
		for _, v := range values {
			check(n, v)
		}
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}
