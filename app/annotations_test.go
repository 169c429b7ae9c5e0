package app_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

type annotationBody struct {
	ID        int64     `json:"id"`
	Name      *string   `json:"name"`
	Prefix    *string   `json:"prefix"`
	At        time.Time `json:"at"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

type annotationList struct {
	Annotations []annotationBody `json:"annotations"`
	Truncated   bool             `json:"truncated"`
}

// uniquePrefix is a prefix no other test of the shared service uses.
func uniquePrefix(what string) string {
	return fmt.Sprintf("%s-%d/", what, rand.Uint64())
}

func postAnnotation(tb testing.TB, e *apptest.Env, body string, headers ...string) annotationBody {
	tb.Helper()
	r := e.Do(tb, "POST", "/v1/annotations", body, headers...)
	if r.Status != 201 {
		tb.Fatalf("POST /v1/annotations %s: %d %s", body, r.Status, r.Body)
	}
	var a annotationBody
	r.Decode(tb, &a)
	return a
}

func listAnnotations(tb testing.TB, e *apptest.Env, query string, headers ...string) []string {
	tb.Helper()
	r := e.Do(tb, "GET", "/v1/annotations?"+query, "", headers...)
	if r.Status != 200 {
		tb.Fatalf("GET /v1/annotations?%s: %d %s", query, r.Status, r.Body)
	}
	var l annotationList
	r.Decode(tb, &l)
	out := []string{}
	for _, a := range l.Annotations {
		out = append(out, a.Text)
	}
	return out
}

func q(s string) string { return url.QueryEscape(s) }

// An annotation is created (at now by default), listed by at with those of
// the prefixes holding its name, and deleted once: a second delete is 404.
func TestAnAnnotationIsCreatedListedByItsMomentAndDeletedOnce(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := uniquePrefix("annot")
	before := time.Now().Add(-time.Second)
	now := postAnnotation(t, e, `{"name": "`+p+`book", "text": "price cut"}`)
	if now.Name == nil || *now.Name != p+"book" || now.Prefix != nil || now.At.Before(before) || now.ID < 1 || now.CreatedAt.IsZero() {
		t.Fatalf("created %+v", now)
	}
	early := postAnnotation(t, e, `{"prefix": "`+p+`", "at": "2025-04-01T09:00:00+02:00", "text": "shop opened"}`)
	if early.Prefix == nil || *early.Prefix != p || !early.At.Equal(time.Date(2025, 4, 1, 7, 0, 0, 0, time.UTC)) {
		t.Fatalf("created %+v", early)
	}
	postAnnotation(t, e, `{"name": "`+p+`other", "text": "not this book's"}`)
	if got, want := listAnnotations(t, e, "name="+q(p+"book")), []string{"shop opened", "price cut"}; !equal(got, want) {
		t.Fatalf("by name: %q, want %q", got, want)
	}
	if got, want := listAnnotations(t, e, "prefix="+q(p)+"&from=2025-04-01&to=2025-04-02&tz=Europe/Berlin"), []string{"shop opened"}; !equal(got, want) {
		t.Fatalf("by prefix, one day: %q, want %q", got, want)
	}
	if got := listAnnotations(t, e, "prefix="+q(p)); len(got) != 3 {
		t.Fatalf("by prefix: %q, want all three", got)
	}
	path := fmt.Sprintf("/v1/annotations/%d", early.ID)
	if r := e.Do(t, "DELETE", path, ""); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := e.Do(t, "DELETE", path, ""); r.Status != 404 || r.ErrorCode() != "not_found" {
		t.Fatalf("second DELETE: %d %s", r.Status, r.Body)
	}
	if got, want := listAnnotations(t, e, "name="+q(p+"book")), []string{"price cut"}; !equal(got, want) {
		t.Fatalf("after the delete: %q, want %q", got, want)
	}
}

// Every refused request is 400 invalid_argument (403 for a reserved
// name) and leaves the annotations as they were.
func TestEveryRefusedAnnotationRequestChangesNothing(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := uniquePrefix("refused")
	postAnnotation(t, e, `{"name": "`+p+`a", "text": "kept"}`)
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": ""}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": "   "}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": "` + strings.Repeat("x", 281) + `"}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a"}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "prefix": "` + p + `", "text": "both"}`, 400},
		{"POST", "/v1/annotations", `{"text": "neither"}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": "x", "at": "yesterday"}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": "x", "colour": "red"}`, 400},
		{"POST", "/v1/annotations", `{"name": "` + p + `a", "text": 5}`, 400},
		{"POST", "/v1/annotations", `{"name": "_` + p + `a", "text": "reserved"}`, 403},
		{"GET", "/v1/annotations?name=" + q(p+"a") + "&from=soon", "", 400},
		{"GET", "/v1/annotations?name=" + q(p+"a") + "&from=2025-04-02&to=2025-04-01", "", 400},
		{"GET", "/v1/annotations?name=" + q(p+"a") + "&prefix=" + q(p), "", 400},
		{"GET", "/v1/annotations", "", 400},
		{"DELETE", "/v1/annotations/x", "", 400},
		{"DELETE", "/v1/annotations/0", "", 400},
		{"DELETE", "/v1/annotations/9223372036854775807", "", 404},
		{"GET", "/v1/counters/" + url.PathEscape(p+"a") + "/history?annotations=maybe", "", 400},
		{"GET", "/v1/counters/" + url.PathEscape(p+"a") + "/history?format=xml", "", 400},
	} {
		t.Run(tc.method+" "+tc.path+" "+tc.body, func(t *testing.T) {
			r := e.Do(t, tc.method, tc.path, tc.body)
			if r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
			if got := listAnnotations(t, e, "prefix="+q(p)); !equal(got, []string{"kept"}) {
				t.Fatalf("after it: %q", got)
			}
		})
	}
}

// A read key within the prefix reads annotations there, a write key
// writes and deletes them; outside its prefixes each is 403, as for the
// counters themselves, for an annotation by id too.
func TestAnnotationsAreScopedAsTheNamesTheyAnnotate(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	mine, theirs := uniquePrefix("mine"), uniquePrefix("theirs")
	reader := bearerOf(createKey(t, e, `{"name": "r", "scopes": ["read"], "prefixes": ["`+mine+`"]}`).Secret)
	writer := bearerOf(createKey(t, e, `{"name": "w", "scopes": ["write"], "prefixes": ["`+mine+`"]}`).Secret)
	theirNote := postAnnotation(t, e, `{"prefix": "`+theirs+`", "text": "theirs"}`)
	myNote := postAnnotation(t, e, `{"name": "`+mine+`x", "text": "mine"}`, writer)

	for _, tc := range []struct {
		what, method, path, body, key string
		status                        int
	}{
		{"read within", "GET", "/v1/annotations?prefix=" + q(mine), "", reader, 200},
		{"read a name within", "GET", "/v1/annotations?name=" + q(mine+"x"), "", reader, 200},
		{"read outside", "GET", "/v1/annotations?prefix=" + q(theirs), "", reader, 403},
		{"read a wider prefix", "GET", "/v1/annotations?prefix=" + q(mine[:3]), "", reader, 403},
		{"write with a read key", "POST", "/v1/annotations", `{"name": "` + mine + `y", "text": "no"}`, reader, 403},
		{"write outside", "POST", "/v1/annotations", `{"prefix": "` + theirs + `", "text": "no"}`, writer, 403},
		{"delete outside", "DELETE", fmt.Sprintf("/v1/annotations/%d", theirNote.ID), "", writer, 403},
		{"delete with a read key", "DELETE", fmt.Sprintf("/v1/annotations/%d", myNote.ID), "", reader, 403},
		{"history outside with annotations", "GET", "/v1/history?prefix=" + q(theirs) + "&annotations=true", "", reader, 403},
		{"no key", "GET", "/v1/annotations?prefix=" + q(mine), "", "Authorization: Bearer ck_unknown", 401},
		{"delete within", "DELETE", fmt.Sprintf("/v1/annotations/%d", myNote.ID), "", writer, 204},
	} {
		r := e.Do(t, tc.method, tc.path, tc.body, tc.key)
		if r.Status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.what, r.Status, r.Body, tc.status)
		}
	}
	if got := listAnnotations(t, e, "prefix="+q(theirs)); !equal(got, []string{"theirs"}) {
		t.Fatalf("their annotations after the refusals: %q", got)
	}
}

// annotations=true adds the annotations of the answer's range to a
// counter's, a prefix's and a public counter's history and to
// breakdowns; those outside the range stay out, and without it the
// answer has no "annotations" at all.
func TestHistoryAndBreakdownsCarryTheAnnotationsOfTheirRange(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := "hits/" + uniquePrefix("annotated")
	name := p + "page"
	berlin, _ := time.LoadLocation("Europe/Berlin")
	e.Do(t, "POST", "/v1/counters/"+url.PathEscape(name)+"/increment", "")
	postAnnotation(t, e, `{"name": "`+name+`", "at": "2025-04-01T22:30:00Z", "text": "in Berlin's 2 April"}`)
	postAnnotation(t, e, `{"prefix": "`+p+`", "at": "2025-04-01T12:00:00Z", "text": "on 1 April"}`)
	postAnnotation(t, e, `{"prefix": "`+p+`", "at": "2025-04-05T12:00:00Z", "text": "outside"}`)
	// "hits" holds every public name and private ones too ("hitsX"): the
	// public reads leave it out. Its moment is this test's alone.
	wide := postAnnotation(t, e, `{"prefix": "hits", "at": "2025-04-01T23:59:59.`+fmt.Sprint(rand.IntN(900000)+100000)+`Z", "text": "wide"}`)
	t.Cleanup(func() { e.Do(t, "DELETE", fmt.Sprintf("/v1/annotations/%d", wide.ID), "") })
	wideAt := wide.At.In(berlin).Format(time.RFC3339)
	rng := "&from=2025-04-01&to=2025-04-03&tz=Europe/Berlin&annotations=true"
	private := []string{"on 1 April 2025-04-01T14:00:00+02:00", "in Berlin's 2 April 2025-04-02T00:30:00+02:00", "wide " + wideAt}
	public := private[:2]
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/v1/counters/" + url.PathEscape(name) + "/history?step=day" + rng, private},
		{"/v1/history?prefix=" + q(p) + rng, private},
		{"/v1/hits/" + url.PathEscape(name) + "/history?step=hour" + rng, public},
		{"/v1/counters/" + url.PathEscape(name) + "/breakdown?by=referrer" + rng, private},
		{"/v1/breakdown?prefix=" + q(p) + "&by=name" + rng, private},
		{"/v1/hits/" + url.PathEscape(name) + "/breakdown?by=referrer" + rng, public},
		{"/v1/hits/breakdown?prefix=" + q(p) + "&by=name" + rng, public},
	} {
		path := tc.path
		r := e.Do(t, "GET", path, "")
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		var body struct {
			Annotations []annotationBody `json:"annotations"`
		}
		r.Decode(t, &body)
		var got []string
		for _, a := range body.Annotations {
			got = append(got, a.Text+" "+a.At.Format(time.RFC3339))
		}
		if !equal(got, tc.want) {
			t.Errorf("%s: annotations %q, want %q", path, got, tc.want)
		}
		plain := e.Do(t, "GET", strings.TrimSuffix(path, "&annotations=true"), "")
		if strings.Contains(string(plain.Body), `"annotations"`) {
			t.Errorf("%s without annotations=true: %s", path, plain.Body)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
