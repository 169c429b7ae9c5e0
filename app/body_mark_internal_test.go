package app

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/keys"
)

// The mark of a body over the limit is the server's alone: a client that
// sends the mark's header itself, on a keep-alive request or with
// Connection: close, is answered as if it had not, while a body announced
// over the limit is still answered 413 whichever connection it came on.
func TestAClientCannotSendTheOversizedMark(t *testing.T) {
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Counters: stillService{},
		Keys: keys.New(nil, keys.Options{}), Capabilities: []Capability{PageHits(nil, nil, nil)}, BodyLimit: 64})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Listener(ln)
	defer a.Shutdown()
	big := `{"by":1,"pad":"` + strings.Repeat("x", 100) + `"}`
	for _, tc := range []struct {
		name    string
		headers string
		body    string
		want    int
	}{
		{"the mark, keep-alive", "X-Countersvc-Oversized-Body: 1\r\n", `{"by":1}`, http.StatusOK},
		{"the mark, Connection: close", "X-Countersvc-Oversized-Body: 1\r\nConnection: close\r\n", `{"by":1}`, http.StatusOK},
		{"the mark in another case, Connection: close", "x-countersvc-oversized-body: yes\r\nConnection: close\r\n", "", http.StatusOK},
		{"over the limit, keep-alive", "", big, http.StatusRequestEntityTooLarge},
		{"over the limit, Connection: close", "Connection: close\r\n", big, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			req := "POST /v1/counters/mark/increment HTTP/1.1\r\nHost: x\r\n" + tc.headers
			if tc.body != "" {
				req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tc.body)) + "\r\n"
			}
			if _, err := io.WriteString(conn, req+"\r\n"+tc.body); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d (%s), want %d", res.StatusCode, body, tc.want)
			}
		})
	}
}
