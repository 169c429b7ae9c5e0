package app_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// A connection that sends nothing, or stops half way through a request,
// past every timeout is closed without a byte: no unsolicited 408 or 500
// that a client could take for the answer to its next request. A raw TCP
// client sees exactly what goes over the wire.
func TestIdleOrStalledConnectionsCloseWithoutAnswer(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, func(c *wire.Config) {
		c.HTTP.ReadTimeout, c.HTTP.WriteTimeout, c.HTTP.IdleTimeout = 300*time.Millisecond, time.Second, 600*time.Millisecond
	})
	addr := strings.TrimPrefix(e.URL, "http://")
	tests := []struct {
		name   string
		first  string // a whole request answered before the connection idles; "" for none
		stalls string // what the client sends, then nothing more
	}{
		{"a fresh connection that never sends a byte", "", ""},
		{"a keep-alive connection idle after an answer", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"a request stopped half way through its headers", "", "GET /healthz HTTP/1.1\r\nHo"},
		{"a request stopped half way through its body", "", "POST /v1/counters/conn/increment HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{\"by\""},
		{"a second request stopped half way", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "GET /heal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			if tt.first != "" {
				io.WriteString(c, tt.first)
				r, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if r.StatusCode != 200 || r.Close {
					t.Fatalf("first request: %d, close %v", r.StatusCode, r.Close)
				}
			}
			io.WriteString(c, tt.stalls)
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, err := io.ReadAll(br)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the connection was still open after 20 s")
			}
			if len(got) != 0 {
				t.Fatalf("the server sent %q", got)
			}
		})
	}
}
