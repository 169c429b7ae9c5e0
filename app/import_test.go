package app_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// importReport is the answer of POST /v1/import.
type importReport struct {
	Mode        string
	Atomic      bool
	Applied     bool
	Read        int64
	Created     int64
	Overwritten int64
	Skipped     int64
	Refused     int64
	Lines       []struct {
		Line                           int64
		Name, Outcome, Reason, Message string
	}
	Truncated bool
}

// outcomes lists the report's lines as "line outcome reason".
func (r importReport) outcomes() []string {
	out := []string{}
	for _, l := range r.Lines {
		out = append(out, fmt.Sprintf("%d %s %s", l.Line, l.Outcome, l.Reason))
	}
	return out
}

func importBody(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func decodeReport(t *testing.T, r apptest.Response) importReport {
	t.Helper()
	var rep importReport
	r.Decode(t, &rep)
	return rep
}

// Each kind of bad line is refused and named with its reason; the good
// lines around it are applied.
func TestImportRefusesEachBadLineAndAppliesTheRest(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	tests := []struct {
		name, line, reason string
	}{
		{"not JSON", `{"name": "` + p + `x", "value": 1`, "malformed"},
		{"two objects", `{"name": "` + p + `x", "value": 1} {}`, "malformed"},
		{"unknown field", `{"name": "` + p + `x", "value": 1, "colour": "red"}`, "malformed"},
		{"no value", `{"name": "` + p + `x"}`, "malformed"},
		{"no name", `{"value": 1}`, "malformed"},
		{"fractional value", `{"name": "` + p + `x", "value": 1.5}`, "malformed"},
		{"value beyond int64", `{"name": "` + p + `x", "value": 9223372036854775808}`, "malformed"},
		{"bad created_at", `{"name": "` + p + `x", "value": 1, "created_at": "yesterday"}`, "malformed"},
		{"name too long", fmt.Sprintf(`{"name": %q, "value": 1}`, strings.Repeat("n", 256)), "invalid_name"},
		{"empty name", `{"name": "", "value": 1}`, "invalid_name"},
		{"control character", `{"name": "` + p + `a\u0007b", "value": 1}`, "invalid_name"},
		{"reserved name", `{"name": "_tickets/board/1", "value": 1}`, "reserved"},
		{"value below min", `{"name": "` + p + `x", "value": -1, "min": 0}`, "out_of_range"},
		{"value above max", `{"name": "` + p + `x", "value": 11, "max": 10}`, "out_of_range"},
		{"min above max", `{"name": "` + p + `x", "value": 5, "min": 9, "max": 1}`, "invalid_bounds"},
		{"line too long", fmt.Sprintf(`{"name": "`+p+`x", "value": 1, "pad": %q}`, strings.Repeat("p", 70<<10)), "malformed"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := fmt.Sprintf("%sok/%d/before", p, i), fmt.Sprintf("%sok/%d/after", p, i)
			r := env.Do(t, "POST", "/v1/import", importBody(
				fmt.Sprintf(`{"name": %q, "value": 7}`, before), tc.line, "", fmt.Sprintf(`{"name": %q, "value": 8}`, after)))
			wantStatus(t, r, 200, "")
			rep := decodeReport(t, r)
			if got, want := rep.outcomes(), []string{"2 refused " + tc.reason}; !reflect.DeepEqual(got, want) {
				t.Fatalf("outcomes %v, want %v (%s)", got, want, r.Body)
			}
			if rep.Read != 3 || rep.Created != 2 || rep.Refused != 1 || !rep.Applied || rep.Lines[0].Message == "" {
				t.Errorf("report %s", r.Body)
			}
			wantValue(t, env, strings.ReplaceAll(before, "/", "%2F"), 7)
			wantValue(t, env, strings.ReplaceAll(after, "/", "%2F"), 8)
		})
	}
}

// mode=create leaves existing counters alone and reports them skipped;
// mode=overwrite replaces their values and bounds. A name that comes twice
// is applied in order, as if line by line.
func TestImportCreateSkipsExistingAndOverwriteReplacesThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode          string
		created, over int64
		outcomes      []string
		oldValue      int64
		oldBounds     string // the JSON of min and max on "old"
		twiceValue    int64
	}{
		{"create", 2, 0, []string{"1 skipped exists", "4 skipped exists"}, 100, `"min":0,`, 1},
		{"overwrite", 2, 2, []string{}, 5, `"max":50,`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			env := apptest.Shared(t)
			p := own()
			wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"old", `{"value": 100, "min": 0}`), 201, "")
			r := env.Do(t, "POST", "/v1/import?mode="+tc.mode, importBody(
				`{"name": "`+p+`old", "value": 5, "max": 50}`,
				`{"name": "`+p+`new", "value": -3, "created_at": "2020-01-02T03:04:05Z"}`,
				`{"name": "`+p+`twice", "value": 1}`,
				`{"name": "`+p+`twice", "value": 2}`))
			wantStatus(t, r, 200, "")
			rep := decodeReport(t, r)
			if rep.Created != tc.created || rep.Overwritten != tc.over || !reflect.DeepEqual(rep.outcomes(), tc.outcomes) {
				t.Fatalf("report %s", r.Body)
			}
			wantValue(t, env, p+"old", tc.oldValue)
			wantValue(t, env, p+"new", -3)
			wantValue(t, env, p+"twice", tc.twiceValue)
			if got := env.Do(t, "GET", "/v1/counters/"+p+"old", ""); !strings.Contains(string(got.Body), tc.oldBounds) {
				t.Errorf("old is %s, want bounds %s", got.Body, tc.oldBounds)
			}
			if got := env.Do(t, "GET", "/v1/counters/"+p+"new", ""); !strings.Contains(string(got.Body), `"created_at":"2020-01-02T03:04:05Z"`) {
				t.Errorf("new is %s, want the line's created_at", got.Body)
			}
		})
	}
}

// With atomic=true one refused line fails the whole import with that
// line's status, names it in the report, and changes nothing.
func TestAtomicImportWithARefusedLineChangesNothing(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/kept", `{"value": 1}`), 201, "")
	tests := []struct {
		name, bad string
		status    int
		code      string
	}{
		{"malformed", `{"name": "a", "value": "one"}`, 400, "invalid_argument"},
		{"out of range", `{"name": "a", "value": 5, "max": 1}`, 422, "out_of_range"},
		{"reserved", `{"name": "_a", "value": 5}`, 403, "permission_denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := takeSnapshot(t, env)
			r := env.Do(t, "POST", "/v1/import?atomic=true&mode=overwrite", importBody(
				`{"name": "kept", "value": 2}`, `{"name": "fresh", "value": 3}`, tc.bad, `{"name": "later", "value": 4}`))
			wantStatus(t, r, tc.status, tc.code)
			var body struct{ Report importReport }
			r.Decode(t, &body)
			if rep := body.Report; rep.Applied || rep.Read != 4 || rep.Created != 0 || rep.Overwritten != 0 ||
				!reflect.DeepEqual(rep.outcomes(), []string{"3 refused " + map[int]string{400: "malformed", 422: "out_of_range", 403: "reserved"}[tc.status]}) {
				t.Fatalf("report %s", r.Body)
			}
			if !reflect.DeepEqual(takeSnapshot(t, env), before) {
				t.Fatal("a refused atomic import changed the data")
			}
		})
	}
	// Without a refusal, everything is applied.
	r := env.Do(t, "POST", "/v1/import?atomic=true&mode=overwrite", importBody(`{"name": "kept", "value": 2}`, `{"name": "fresh", "value": 3}`))
	wantStatus(t, r, 200, "")
	if rep := decodeReport(t, r); !rep.Applied || rep.Created != 1 || rep.Overwritten != 1 {
		t.Fatalf("report %s", r.Body)
	}
	wantValue(t, env, "kept", 2)
	wantValue(t, env, "fresh", 3)
}

// A request the service refuses as a whole (bad options, a body that is not
// what it says) is 400 and changes nothing.
func TestImportRefusesBadRequestsWholly(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	good := importBody(`{"name": "a", "value": 1}`)
	tests := []struct {
		name, path, body string
		headers          []string
	}{
		{"unknown mode", "/v1/import?mode=merge", good, nil},
		{"bad atomic", "/v1/import?atomic=yes", good, nil},
		{"unknown encoding", "/v1/import", good, []string{"Content-Encoding: br"}},
		{"not gzip", "/v1/import", good, []string{"Content-Encoding: gzip"}},
		{"cut gzip", "/v1/import", string(gzipped(t, good)[:20]), []string{"Content-Encoding: gzip"}},
		{"two idempotency keys", "/v1/import", good, []string{"Idempotency-Key: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := takeSnapshot(t, env)
			r := env.Do(t, "POST", tc.path, tc.body, tc.headers...)
			wantStatus(t, r, 400, "invalid_argument")
			if !reflect.DeepEqual(takeSnapshot(t, env), before) {
				t.Fatal("a refused import changed the data")
			}
		})
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A gzipped body is read as the plain one.
func TestImportReadsGzip(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	r := env.Do(t, "POST", "/v1/import", string(gzipped(t, importBody(`{"name": "`+p+`z/1", "value": 11}`, `{"name": "`+p+`z/2", "value": 12}`))),
		"Content-Encoding: gzip")
	wantStatus(t, r, 200, "")
	if rep := decodeReport(t, r); rep.Created != 2 {
		t.Fatalf("report %s", r.Body)
	}
	wantValue(t, env, p+"z%2F2", 12)
}

// The same Idempotency-Key with the same lines replays the first report
// and changes nothing, whether the retry is gzipped or not; with other
// lines or another mode it is 409.
func TestImportIsIdempotentWithAKey(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	body := importBody(`{"name": "`+p+`i/a", "value": 1}`, `{"name": "`+p+`i/b", "value": "bad"}`)
	first := env.Do(t, "POST", "/v1/import?mode=overwrite", body, "Idempotency-Key: "+p+"imp-1")
	wantStatus(t, first, 200, "")
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the first import is marked replayed")
	}
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"i%2Fa", `{"value": 99}`), 200, "")
	tests := []struct {
		name, path, body string
		headers          []string
		status           int
	}{
		{"same lines", "/v1/import?mode=overwrite", body, nil, 200},
		{"same lines gzipped", "/v1/import?mode=overwrite", string(gzipped(t, body)), []string{"Content-Encoding: gzip"}, 200},
		{"other lines", "/v1/import?mode=overwrite", importBody(`{"name": "` + p + `i/a", "value": 2}`), nil, 409},
		{"other mode", "/v1/import?mode=create", body, nil, 409},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := env.Do(t, "POST", tc.path, tc.body, append(tc.headers, "Idempotency-Key: "+p+"imp-1")...)
			if r.Status != tc.status {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.status)
			}
			if tc.status == 200 && (string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true") {
				t.Fatalf("replay %s (replayed %q), want %s", r.Body, r.Header.Get("Idempotent-Replayed"), first.Body)
			}
			wantValue(t, env, p+"i%2Fa", 99)
		})
	}
}

// A key may import only inside its prefixes: a line outside them is
// refused (permission_denied) and the rest applied; atomic, the import is
// 403 and changes nothing; a key without the write scope is 403 at once.
// Idempotency keys are the API key's own.
func TestImportKeepsToTheKeysPrefixes(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	writer := bearerOf(createKey(t, env, `{"name": "shop", "scopes": ["write"], "prefixes": ["shop/"]}`).Secret)
	other := bearerOf(createKey(t, env, `{"name": "shop 2", "scopes": ["write"], "prefixes": ["shop/"]}`).Secret)
	reader := bearerOf(createKey(t, env, `{"name": "reader", "scopes": ["read"], "prefixes": ["shop/"]}`).Secret)
	body := importBody(`{"name": "shop/a", "value": 1}`, `{"name": "other/b", "value": 2}`)

	before := takeSnapshot(t, env)
	wantStatus(t, env.Do(t, "POST", "/v1/import?atomic=true", body, writer), 403, "permission_denied")
	wantStatus(t, env.Do(t, "POST", "/v1/import", body, reader), 403, "permission_denied")
	if !reflect.DeepEqual(takeSnapshot(t, env), before) {
		t.Fatal("a refused import changed the data")
	}

	r := env.Do(t, "POST", "/v1/import", body, writer, "Idempotency-Key: same")
	wantStatus(t, r, 200, "")
	if rep := decodeReport(t, r); rep.Created != 1 || !reflect.DeepEqual(rep.outcomes(), []string{"2 refused permission_denied"}) {
		t.Fatalf("report %s", r.Body)
	}
	wantValue(t, env, "shop%2Fa", 1)
	if _, ok := valueOf(t, env, "other%2Fb"); ok {
		t.Fatal("other/b was imported by a key of shop/")
	}
	// The other key's "same" is a key of its own: not a replay.
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/shop%2Fa", `{"value": 5}`), 200, "")
	r = env.Do(t, "POST", "/v1/import?mode=overwrite", importBody(`{"name": "shop/a", "value": 6}`), other, "Idempotency-Key: same")
	wantStatus(t, r, 200, "")
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("one API key's import was replayed to another")
	}
	wantValue(t, env, "shop%2Fa", 6)
}

// An export of one service imports into another as it was: names, values,
// bounds and created_at.
func TestExportImportsIntoAnotherService(t *testing.T) {
	t.Parallel()
	from, to := apptest.New(t), apptest.New(t)
	wantStatus(t, from.Do(t, "PUT", "/v1/counters/m%2Fa", `{"value": 3, "min": 0, "max": 10}`), 201, "")
	wantStatus(t, from.Do(t, "PUT", "/v1/counters/m%2Fb%20c", `{"value": -9223372036854775808}`), 201, "")
	export := from.Do(t, "GET", "/v1/export?prefix=m/", "")
	wantStatus(t, export, 200, "")
	r := to.Do(t, "POST", "/v1/import", string(export.Body))
	wantStatus(t, r, 200, "")
	if rep := decodeReport(t, r); rep.Created != 2 {
		t.Fatalf("report %s", r.Body)
	}
	for _, name := range []string{"m%2Fa", "m%2Fb%20c"} {
		a, b := from.Do(t, "GET", "/v1/counters/"+name, ""), to.Do(t, "GET", "/v1/counters/"+name, "")
		// updated_at is the import's own time.
		strip := func(b []byte) string { s := string(b); return s[:strings.Index(s, `"updated_at"`)] }
		if strip(a.Body) != strip(b.Body) {
			t.Errorf("imported %s, exported %s", b.Body, a.Body)
		}
	}
}

// A large import streams: 30,000 lines (30 of the store's chunks, 18 times
// the body limit) sent chunked, as they are made, all applied. The lines
// are applied as they come (the first ones are stored while the body is
// still on its way), and an import may take longer than the server's read
// timeout (here 1 s, with a pause of 1.5 s midway). (Its memory is
// measured by scripts/bench -scenario import.) MySQL calls get the patient
// deadline: each chunk's statement waits for the CPU on a loaded machine,
// which is not what this test looks at.
func TestImportStreamsManyLines(t *testing.T) {
	t.Parallel()
	const readTimeout = time.Second
	env := apptest.New(t, patient, func(c *wire.Config) { c.HTTP.ReadTimeout = readTimeout })
	const n = 30_000
	pr, pw := io.Pipe()
	half, resume := make(chan struct{}), make(chan struct{})
	go func() {
		for i := range n {
			if i == n/2 {
				close(half)
				<-resume
			}
			fmt.Fprintf(pw, `{"name": "bulk/%06d", "value": %d}`+"\n", i, i)
		}
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/import", pr)
	type answer struct {
		r   apptest.Response
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := (&http.Client{}).Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		answered <- answer{apptest.Response{Status: res.StatusCode, Header: res.Header, Body: body}, err}
	}()
	select {
	case <-half:
	case a := <-answered:
		t.Fatalf("answered before half the body was sent: %v %d %s", a.err, a.r.Status, a.r.Body)
	}
	paused := time.Now()
	waitFor(t, time.Minute, func() bool { return env.Stored(t, "bulk/000000") == 0 })
	time.Sleep(readTimeout + readTimeout/2 - time.Since(paused))
	close(resume)
	a := <-answered // bounded by ctx
	if a.err != nil {
		t.Fatalf("import of %d lines: %v", n, a.err)
	}
	wantStatus(t, a.r, 200, "")
	if rep := decodeReport(t, a.r); rep.Read != n || rep.Created != n || rep.Refused != 0 {
		t.Fatalf("report %s", a.r.Body)
	}
	wantValue(t, env, "bulk%2F000000", 0)
	wantValue(t, env, fmt.Sprintf("bulk%%2F%06d", n-1), n-1)
}

// A body sent without a length (chunked, as from a pipe: gzip | curl -T -)
// is answered as soon as it is read, like one with a length. The server
// used to read on past its end for leftovers, where fasthttp's chunked
// reader waits for more instead of answering EOF: five seconds each.
func TestChunkedImportIsAnsweredOnceItsBodyEnds(t *testing.T) {
	env := apptest.Shared(t)
	p := own()
	req, _ := http.NewRequest("POST", env.URL+"/v1/import", io.MultiReader(strings.NewReader(`{"name": "`+p+`piped", "value": 7}`+"\n"))) // no length: chunked
	start := time.Now()
	res, err := env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if took := time.Since(start); res.StatusCode != 200 || took > 3*time.Second {
		t.Fatalf("status %d after %v; want 200 as soon as the body ended", res.StatusCode, took)
	}
	wantValue(t, env, p+"piped", 7)
}

// A report names at most 1,000 skipped or refused lines, counts them all,
// and says it was cut.
func TestImportReportIsCapped(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	lines := make([]string, 1500)
	for i := range lines {
		lines[i] = `{"name": "", "value": 1}`
	}
	r := env.Do(t, "POST", "/v1/import", importBody(lines...))
	wantStatus(t, r, 200, "")
	if rep := decodeReport(t, r); rep.Refused != 1500 || len(rep.Lines) != 1000 || !rep.Truncated {
		t.Fatalf("refused %d, listed %d, truncated %v", rep.Refused, len(rep.Lines), rep.Truncated)
	}
}

// After an import answers, reads through the cache show the imported
// values, never the ones cached before.
func TestImportInvalidatesTheCache(t *testing.T) {
	t.Parallel()
	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	for _, name := range []string{"c%2Fa", "c%2Fb", "d"} {
		wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+name, `{"value": 1}`), 201, "")
		wantValue(t, env, name, 1) // cached now
	}
	r := env.Do(t, "POST", "/v1/import?mode=overwrite", importBody(`{"name": "c/a", "value": 2}`, `{"name": "c/b", "value": 3}`))
	wantStatus(t, r, 200, "")
	wantValue(t, env, "c%2Fa", 2)
	wantValue(t, env, "c%2Fb", 3)
	r = env.Do(t, "POST", "/v1/import?mode=overwrite", importBody(`{"name": "c/a", "value": 4}`, `{"name": "d", "value": 5}`))
	wantStatus(t, r, 200, "")
	wantValue(t, env, "c%2Fa", 4)
	wantValue(t, env, "d", 5)
}

// Streaming the import's body leaves the other endpoints' limit as it was,
// also for a body sent in chunks without a Content-Length.
func TestChunkedBodyOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	body := `{"value": 1, "pad": "` + strings.Repeat("x", 70<<10) + `"}`
	// On a connection of its own, written beside the read of the answer:
	// the service answers once the limit is passed and closes, and a
	// client still writing then gets a reset instead of the answer (as
	// net/http's client did in a full run).
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		fmt.Fprint(conn, "PUT /v1/counters/"+p+"big HTTP/1.1\r\nHost: countersvc\r\nTransfer-Encoding: chunked\r\n\r\n") // no length
		for chunk := range slices.Chunk([]byte(body), 4<<10) {
			if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return // refused and closed, as it should be
			}
		}
		fmt.Fprint(conn, "0\r\n\r\n")
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	wantStatus(t, apptest.Response{Status: res.StatusCode, Body: b}, 413, "payload_too_large")
	if _, ok := valueOf(t, env, p+"big"); ok {
		t.Fatal("an oversized body set the counter")
	}
	// A body under the limit, chunked, is read as before.
	req, _ := http.NewRequest("PUT", env.URL+"/v1/counters/"+p+"small", io.MultiReader(strings.NewReader(`{"value": 4}`)))
	res, err = env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("chunked PUT: %d", res.StatusCode)
	}
	wantValue(t, env, p+"small", 4)
}

// MySQL killed in the middle of an import: 503 unavailable with the report
// of what was committed, and the message names the lines in doubt. Each
// line is in MySQL whole or not at all: the stored counters are exactly
// the report's lines, or those and the whole chunk in doubt, never part of
// it, and nothing after it; and running the import again from the lines in
// doubt finishes it, as the message says.
func TestImportWhenMySQLDiesMidwayReportsWhatWasCommitted(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	// A killed server refuses at once; the deadline is only for a starved
	// one, where 2 s made the first chunk answer 503 before the kill (two
	// busy loops beside a load of 25 on two cores).
	env := apptest.NewWithDSN(t, m.DSN("imports"), func(c *wire.Config) { c.MySQL.Timeout = 30 * time.Second })
	line := func(i int) string { return fmt.Sprintf(`{"name": "out/%06d", "value": %d}`+"\n", i, i) }
	// On a connection of its own, the body written beside the read of the
	// answer: the service answers 503 while lines still come and closes, so
	// the writes then fail, as they may. net/http's client gives up on the
	// answer when its write fails first ("connection reset by peer", in a
	// run with three test binaries on two cores); the answer is there for a
	// client that reads it.
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	killed, written := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(written)
		w := bufio.NewWriterSize(httputil.NewChunkedWriter(conn), 4<<10) // a chunk a flush
		fmt.Fprint(conn, "POST /v1/import HTTP/1.1\r\nHost: countersvc\r\nTransfer-Encoding: chunked\r\n\r\n")
		i := 0
		for ; i < 20_000; i++ {
			w.WriteString(line(i))
		}
		if w.Flush() != nil {
			killed <- false
			return
		}
		// Once some chunks are in (two: the report must name committed
		// ones), MySQL dies; the lines go on.
		for deadline := time.Now().Add(30 * time.Second); stored(t, env) < 2000; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d lines committed 30 s after 20,000 were sent, want 2,000", stored(t, env))
				killed <- false
				conn.Close() // no answer to wait for
				return
			}
		}
		m.Kill()
		killed <- true
		for ; i < 40_000; i++ {
			if _, err := w.WriteString(line(i)); err != nil {
				return // answered and closed, as it may be
			}
		}
		if w.Flush() == nil {
			fmt.Fprint(conn, "0\r\n\r\n")
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("the answer's body: %v", err)
	}
	conn.Close() // ends the writes, if any are left
	<-written
	if !<-killed {
		t.Fatalf("answered %d %s before MySQL was killed", res.StatusCode, body)
	}
	r := apptest.Response{Status: res.StatusCode, Body: body}
	wantStatus(t, r, 503, "unavailable")
	var answer struct {
		Error  struct{ Message string }
		Report importReport
	}
	r.Decode(t, &answer)
	if strings.Contains(strings.ToLower(answer.Error.Message), "sql") || !strings.Contains(answer.Error.Message, "may or may not have been applied") && !strings.Contains(answer.Error.Message, "were not applied") {
		t.Errorf("message %q", answer.Error.Message)
	}
	rep := answer.Report
	if rep.Created < 1000 || rep.Created%1000 != 0 || rep.Refused != 0 {
		t.Fatalf("report %s", body)
	}

	m.Start(t)
	env.WaitRecovered(t, "/v1/counters/after/increment")
	n := stored(t, env)
	if n != rep.Created && n != rep.Created+1000 {
		t.Fatalf("%d counters stored; the report says %d were committed, and a chunk is 1,000 lines", n, rep.Created)
	}
	var wrong int
	if err := env.DB.QueryRow("SELECT COUNT(*) FROM counter WHERE name LIKE 'out/%' AND (CAST(SUBSTRING(name, 5) AS SIGNED) != value OR value >= ?)", n).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 {
		t.Errorf("%d stored counters are not the first %d lines as sent", wrong, n)
	}
	// Sent again from the first line in doubt, two chunks' worth: what
	// arrived is skipped, the rest created.
	var again strings.Builder
	for i := rep.Created; i < rep.Created+2000; i++ {
		again.WriteString(line(int(i)))
	}
	r = env.Do(t, "POST", "/v1/import", again.String())
	wantStatus(t, r, 200, "")
	if rerun := decodeReport(t, r); rerun.Skipped != n-rep.Created || rerun.Created != rep.Created+2000-n {
		t.Errorf("the import run again from line %d: %d skipped, %d created; want %d and %d", rep.Created+1, rerun.Skipped, rerun.Created, n-rep.Created, rep.Created+2000-n)
	}
	if got := stored(t, env); got != rep.Created+2000 {
		t.Errorf("%d counters stored after the import ran again, want %d", got, rep.Created+2000)
	}
}

// stored is how many counters of the outage test's import are in MySQL,
// or -1 when MySQL does not answer.
func stored(t *testing.T, env *apptest.Env) int64 {
	var n int64
	if err := env.DB.QueryRow("SELECT COUNT(*) FROM counter WHERE name LIKE 'out/%'").Scan(&n); err != nil {
		return -1
	}
	return n
}
