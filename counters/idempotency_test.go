package counters_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/counters"
)

// Keys are 1 to 255 printable ASCII characters, U+0020 to U+007E; the
// characters an HTTP client cannot send are checked here.
func TestIdempotencyKeyValidation(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"order-48213", true},
		{" ~", true},
		{strings.Repeat("k", 255), true},
		{"", false},
		{strings.Repeat("k", 256), false},
		{"a\x7fb", false},
		{"a\x1fb", false},
		{"a\x00b", false},
		{"caf\u00e9", false},
	}
	for _, tt := range tests {
		err := counters.Idempotency{Key: tt.key}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("Validate(%q) = %v, want ok %v", tt.key, err, tt.ok)
		}
		if err != nil && counters.ErrorCode(err) != counters.EINVALID {
			t.Errorf("Validate(%q) code %s", tt.key, counters.ErrorCode(err))
		}
	}
}

// A batch item's error names the item, and quotes its name only when the
// name is a valid one.
func TestItemErrorNamesTheItem(t *testing.T) {
	cause := counters.Errorf(counters.EOUTOFRANGE, "Too much.")
	tests := []struct{ name, want string }{
		{"books/Bulldozer", `increments[3] ("books/Bulldozer"): Too much.`},
		{strings.Repeat("x", 300), `increments[3]: Too much.`},
		{"bad\x01name", `increments[3]: Too much.`},
	}
	for _, tt := range tests {
		err := counters.ItemError(3, tt.name, cause)
		if got := counters.ErrorMessage(err); got != tt.want {
			t.Errorf("message %q, want %q", got, tt.want)
		}
		if counters.ErrorCode(err) != counters.EOUTOFRANGE {
			t.Errorf("code %s, want the cause's", counters.ErrorCode(err))
		}
	}
}
