package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// A HEAD answer ends with its headers: a byte of body after them would be
// read as the start of the next answer on the same connection. Each HEAD
// operation of the spec is sent with a GET behind it on one connection,
// and the GET's answer must come through intact.
func TestHeadAnswersEndWithTheirHeaders(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	e := apptest.New(t)
	e.Do(t, "PUT", "/v1/counters/hits%2Fa", `{"value": 1}`)
	fill := strings.NewReplacer("{name}", "hits%2Fa", "{board_id}", "1", "{local_id}", "1",
		"{company_id}", "1", "{key}", "A-1", "{id}", "1")
	for _, item := range s.doc.Paths.InMatchingOrder() {
		if s.doc.Paths.Value(item).Head == nil {
			continue
		}
		path := fill.Replace(item)
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "HEAD %s HTTP/1.1\r\nHost: test\r\n\r\nGET /healthz HTTP/1.1\r\nHost: test\r\n\r\n", path)
			br := bufio.NewReader(conn)
			head, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
			if err != nil {
				t.Fatal(err)
			}
			head.Body.Close()
			next, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("the answer after HEAD (%d) does not parse: %v", head.StatusCode, err)
			}
			body, _ := io.ReadAll(next.Body)
			if next.StatusCode != 200 || string(body) != `{"status":"ok"}` {
				t.Errorf("the answer after HEAD (%d): %d %q", head.StatusCode, next.StatusCode, body)
			}
		})
	}
}
