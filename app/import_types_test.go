package app_test

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// An import takes exactly the Content-Types openapi.yaml lists for its
// body, and none: each one's line is applied, with parameters or without
// (curl --data-binary sends the form type unless told otherwise). Any
// other type is 415 unsupported_media_type, as the document says, and
// reads nothing.
func TestAnImportTakesTheContentTypesOpenAPIListsAndRefusesOthers(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	e := apptest.New(t)
	op := s.operations()["importCounters"]
	if op.Responses.Status(http.StatusUnsupportedMediaType) == nil {
		t.Fatal("openapi.yaml lists no 415 for importCounters")
	}
	var documented []string
	for ct := range op.RequestBody.Value.Content {
		documented = append(documented, ct)
	}
	slices.Sort(documented)
	for _, ct := range []string{"application/x-ndjson", "application/x-www-form-urlencoded", "application/json"} {
		if !slices.Contains(documented, ct) { // JSON lines' own; what curl --data-binary and curl --json send
			t.Errorf("openapi.yaml lists %v for an import, not %s", documented, ct)
		}
	}

	sent := map[string]int{"": http.StatusOK} // no Content-Type at all
	for _, ct := range documented {
		sent[ct] = http.StatusOK
		sent[mime.FormatMediaType(ct, map[string]string{"charset": "utf-8"})] = http.StatusOK
	}
	for _, ct := range []string{"multipart/form-data; boundary=x", "text/csv", "application/xml", "not a type"} {
		sent[ct] = http.StatusUnsupportedMediaType
	}
	i := 0
	for ct, want := range sent {
		i++
		name := fmt.Sprintf("imp/type%d", i)
		body := fmt.Sprintf("{\"name\": %q, \"value\": 7}\n", name)
		if strings.HasPrefix(ct, "multipart/") { // the file as curl -F file=@export.jsonl sends it
			body = "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"export.jsonl\"\r\n\r\n" + body + "\r\n--x--\r\n"
		}
		r := importAs(t, e, ct, body)
		if r.Status != want {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, r.Status, r.Body, want)
			continue
		}
		got := e.Do(t, "GET", "/v1/counters/"+url.PathEscape(name), "").Status
		switch {
		case want == http.StatusOK && got != http.StatusOK:
			t.Errorf("Content-Type %q: answered 200, but the counter is not there (%d)", ct, got)
		case want != http.StatusOK && got != http.StatusNotFound:
			t.Errorf("Content-Type %q: refused, but the line was applied (%d)", ct, got)
		case want != http.StatusOK && r.ErrorCode() != "unsupported_media_type":
			t.Errorf("Content-Type %q: code %q, want unsupported_media_type", ct, r.ErrorCode())
		}
	}
}

// importAs posts body to /v1/import with Content-Type ct, or none for "".
func importAs(t *testing.T, e *apptest.Env, ct, body string) apptest.Response {
	t.Helper()
	req, err := http.NewRequest("POST", e.URL+"/v1/import", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return apptest.Response{Status: res.StatusCode, Header: res.Header, Body: b}
}
