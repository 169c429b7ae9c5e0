package app

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/live"
)

// An event's data is JSON that names the counter exactly, whatever its
// name holds (quotes, backslashes, non-ASCII), and its id is the version.
func TestEventsAreTheContractsShapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 11, 24, 16, 0, 0, 123456000, time.UTC)
	for _, name := range []string{"books/Red Horse Hill", `a"b\c`, "ünï/<&>"} {
		for _, deleted := range []bool{false, true} {
			var b strings.Builder
			w := bufio.NewWriter(&b)
			writeEvent(w, live.Update{Name: name, Value: -42, Version: at.UnixMicro(), Deleted: deleted})
			w.Flush()
			lines := strings.Split(b.String(), "\n")
			wantEvent := map[bool]string{false: "event: counter", true: "event: deleted"}[deleted]
			if len(lines) != 5 || lines[0] != "id: 1764000000123456" || lines[1] != wantEvent || lines[3] != "" || lines[4] != "" {
				t.Fatalf("%q", b.String())
			}
			var data struct {
				Name  string
				Value *int64
				At    string
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &data); err != nil {
				t.Fatalf("%s: %v", lines[2], err)
			}
			if data.Name != name || deleted != (data.Value == nil) || (!deleted && (*data.Value != -42 || data.At != "2025-11-24T16:00:00.123456Z")) {
				t.Errorf("%s: %+v", lines[2], data)
			}
		}
	}
}
