package readmetest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/readmetest"
)

const sample = "Intro\n\n" +
	"```sh\ncurl \"$B/not/run\"\n```\n\n" +
	"<!-- example -->\n```sh\n" +
	"B=http://localhost:8080\n" +
	"# a comment\n" +
	"curl -X POST \"$B/a\"   # => {\"value\":1}\n" +
	"curl -i -X POST -d '{\"by\": 2,\n" +
	"                    \"x\": 1}' \\\n" +
	"     \"$B/b\"   # a remark\n" +
	"# => HTTP/1.1 200 OK\n" +
	"# => Idempotent-Replayed: true\n" +
	"# => {\"value\":3,...}\n" +
	"```\n\n" +
	"<!-- example -->\n```sh\nexport T=\"x\"\ncurl -X DELETE \"$B/c\"   # => 204\n```\n"

func TestParseFindsTheMarkedRequestsTheirSetupAndAnswers(t *testing.T) {
	ex, err := readmetest.Parse("sample.md", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ex), 3; got != want {
		t.Fatalf("%d requests, want %d: %+v", got, want, ex)
	}
	if got, want := ex[0].Answer, []string{`{"value":1}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answer on the request's line: %q, want %q", got, want)
	}
	if got := ex[1].Command; !strings.HasSuffix(got, `"$B/b"   # a remark`) || strings.Count(got, "\n") != 2 {
		t.Errorf("a request continued in quotes and by a backslash: %q", got)
	}
	if got, want := strings.Join(ex[1].Answer, "|"), `HTTP/1.1 200 OK|Idempotent-Replayed: true|{"value":3,...}`; got != want {
		t.Errorf("answer lines: %q, want %q", got, want)
	}
	if got, want := strings.Join(ex[0].Setup, "|"), `B=http://localhost:8080`; got != want {
		t.Errorf("setup before the first request: %q, want %q", got, want)
	}
	if got, want := strings.Join(ex[2].Setup, "|"), `export T="x"`; got != want {
		t.Errorf("setup of a later block, each assignment once: %q, want %q", got, want)
	}
	if ex[2].File != "sample.md" || ex[2].Line != 23 {
		t.Errorf("at %s:%d, want sample.md:23", ex[2].File, ex[2].Line)
	}
}

func TestParseRefusesWhatItWouldSkip(t *testing.T) {
	for name, readme := range map[string]string{
		"answer in an unmarked block": "```sh\ncurl x\n# => 204\n```\n",
		"answer after no request":     "<!-- example -->\n```sh\n# => 204\n```\n",
		"another command":             "<!-- example -->\n```sh\necho hi\n```\n",
		"marker before another fence": "<!-- example -->\n```json\n{}\n```\n",
		"open quote":                  "<!-- example -->\n```sh\ncurl -d '{\n```\n",
	} {
		_, err := readmetest.Parse("guide.md", []byte(readme))
		switch {
		case err == nil:
			t.Errorf("%s: no error", name)
		case !strings.HasPrefix(err.Error(), "guide.md:"):
			t.Errorf("%s: %q does not name the file", name, err)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		name   string
		doc    []string
		out    string
		status int
		ok     bool
	}{
		{"same JSON, other spacing and order", []string{`{"name":"a","value":1}`}, `{"value": 1, "name": "a"}`, 200, true},
		{"another value", []string{`{"name":"a","value":1}`}, `{"name":"a","value":11}`, 200, false},
		{"a member not documented", []string{`{"name":"a"}`}, `{"name":"a","value":1}`, 200, false},
		{"... allows more members", []string{`{"name":"a",...}`}, `{"name":"a","value":1}`, 200, true},
		{`"..." is any value`, []string{`{"at":"...","n":1}`}, `{"at":"2026-01-01T00:00:00Z","n":1}`, 200, true},
		{"... in an array", []string{`{"l":[1,...]}`}, `{"l":[1,2,3]}`, 200, true},
		{"a shorter array", []string{`{"l":[1,2]}`}, `{"l":[1]}`, 200, false},
		{"... first in an array: the last elements", []string{`{"l":[...,3]}`}, `{"l":[1,2,3]}`, 200, true},
		{"... first in an array, another last", []string{`{"l":[...,2]}`}, `{"l":[1,2,3]}`, 200, false},
		{"a documented status", []string{`201 {"n":1}`}, `{"n":1}`, 201, true},
		{"another status", []string{`201 {"n":1}`}, `{"n":1}`, 200, false},
		{"no documented status needs 2xx", nil, ``, 404, false},
		{"a status alone", []string{`204`}, ``, 204, true},
		{"headers with curl -i", []string{"HTTP/1.1 200 OK", "Idempotent-Replayed: true", `{"n":1}`},
			"HTTP/1.1 200 OK\r\nidempotent-replayed: true\r\nContent-Type: application/json\r\n\r\n{\"n\":1}", 200, true},
		{"a missing header", []string{"HTTP/1.1 200 OK", "Idempotent-Replayed: true"},
			"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"n\":1}", 200, false},
		{"text", []string{"ok"}, "ok\n", 200, true},
	} {
		doc, err := readmetest.ParseDocumented(c.doc)
		if err != nil {
			t.Fatal(err)
		}
		d := readmetest.Compare(doc, readmetest.ParseReceived([]byte(c.out), c.status))
		if (d == "") != c.ok {
			t.Errorf("%s: Compare says %q, want ok=%v", c.name, d, c.ok)
		}
	}
}

func TestDocumentsListsTheREADMEAndEveryGuideUnderDocs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"README.md", "docs/keys.md", "docs/a/deep.md", "docs/chart.svg", "other.md"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readmetest.Documents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(got, " "), "README.md docs/a/deep.md docs/keys.md"; got != want {
		t.Errorf("Documents = %s, want %s", got, want)
	}
}

func TestParseTakesCountersctlLinesAsRequests(t *testing.T) {
	ex, err := readmetest.Parse("guide.md", []byte("<!-- example -->\n```sh\ncountersctl inc hits/a   # => 1\ncountersctl ls hits/\n# => hits/a\t1\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 2 || !readmetest.IsCountersctl(ex[0].Command) || strings.Join(ex[0].Answer, "|") != "1" || strings.Join(ex[1].Answer, "|") != "hits/a\t1" {
		t.Errorf("parsed %+v, want two countersctl requests answering 1 and hits/a<TAB>1", ex)
	}
}

func TestACountersctlAnswerIsWhatItPrintsWhateverItStartsWith(t *testing.T) {
	for _, c := range []struct {
		name, doc, printed string
		ok                 bool
	}{
		{"a value of three digits", "404", "404\n", true},
		{"a board whose id has three digits", "201\tROCK", "201\tROCK\n", true},
		{"a line like a header", "Bug: it crashes", "Bug: it crashes\n", true},
		{"another value", "404", "405\n", false},
	} {
		ex, err := readmetest.Parse("guide.md", []byte("<!-- example -->\n```sh\ncountersctl get x   # => "+c.doc+"\n```\n"))
		if err != nil || len(ex) != 1 {
			t.Fatalf("%s: parsed %+v, %v", c.name, ex, err)
		}
		doc, err := ex[0].Documented()
		if err != nil {
			t.Fatal(err)
		}
		if d := readmetest.Compare(doc, readmetest.ParseReceived([]byte(c.printed), 200)); (d == "") != c.ok {
			t.Errorf("%s: Compare says %q, want ok=%v", c.name, d, c.ok)
		}
	}
}

func TestParseRefusesAnAnswerWrittenAsAPlainComment(t *testing.T) {
	for name, readme := range map[string]string{
		"JSON after a request":      "```sh\ncurl x\n# {\"value\": 1}\n```\n",
		"on the request's line":     "```sh\ncurl -i x   # HTTP/1.1 503 ... Connection: close\n```\n",
		"a status":                  "```sh\ncurl x\n# 404 not found\n```\n",
		"what countersctl wrote":    "```sh\ncountersctl inc x -2\n# stderr: countersctl: no (out_of_range)\n```\n",
		"an array in a bash block":  "```bash\ncurl x\n# [1, 2]\n```\n",
		"an answer after a comment": "```sh\n# the stock, then:\ncurl x\n#  {\"value\": 1}\n```\n",
	} {
		if _, err := readmetest.Parse("guide.md", []byte(readme)); err == nil || !strings.Contains(err.Error(), "not marked") {
			t.Errorf("%s: %v, want an error saying the block is not marked", name, err)
		}
	}
	for name, readme := range map[string]string{
		"words":              "```sh\ncurl x   # answers once the counter exists\n```\n",
		"a Go block":         "```go\n// # {not shell}\nx := []int{1}\n```\n",
		"a comment of words": "```sh\n# 3 steps: first\ncurl x\n```\n",
	} {
		if _, err := readmetest.Parse("guide.md", []byte(readme)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseRefusesAnExampleThatNamesAnotherMachine(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`curl "http://localhost:8080/v1/counters/a"`, true},
		{`B=http://127.0.0.1:8080`, true},
		{`curl -X POST "$B/v1/webhooks" --json '{"url": "http://127.0.0.1:9000/hooks/counters", "name": "a", "thresholds": [0]}'`, true},
		{`curl -H 'Origin: https://blog.example.com' -A "Bot (+http://www.google.com/bot.html)" "$B/v1/hits/a"`, true},
		{`curl -X POST "$B/v1/webhooks" --json '{"url": "https://93.184.215.14/hooks/counters", "name": "a"}'`, false},
		{`countersctl webhooks create --endpoint https://93.184.215.14/restock --name a`, false},
		{`curl "https://example.com/v1/counters/a"`, false},
		{`B=http://counters.internal:8080`, false},
		{`curl "http://[::1]:8080/healthz"`, true},
		{`curl "http://10.0.0.7:8080/healthz"`, false},
	} {
		_, err := readmetest.Parse("guide.md", []byte("<!-- example -->\n```sh\n"+c.line+"\ncurl x\n```\n"))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.line, err, c.ok)
		}
	}
}

func TestACountersctlAnswerMayHoldItsStderrAndExitStatus(t *testing.T) {
	ex, err := readmetest.Parse("guide.md", []byte("<!-- example -->\n```sh\ncountersctl inc s -26\n# => stderr: countersctl: below min (out_of_range)\n# => exit status 1\n```\n"))
	if err != nil || len(ex) != 1 {
		t.Fatalf("parsed %+v, %v", ex, err)
	}
	doc, err := ex[0].Documented()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  readmetest.Answer
		ok   bool
	}{
		{"as documented", readmetest.Answer{Exit: 1, Stderr: "countersctl: below min (out_of_range)\n"}, true},
		{"another message", readmetest.Answer{Exit: 1, Stderr: "countersctl: Value -1 is below the min.\n"}, false},
		{"success", readmetest.Answer{Exit: 0, Body: "-1\n"}, false},
		{"printed something too", readmetest.Answer{Exit: 1, Stderr: "countersctl: below min (out_of_range)\n", Body: "x"}, false},
	} {
		if d := readmetest.CompareCommand(doc, c.got); (d == "") != c.ok {
			t.Errorf("%s: CompareCommand says %q, want ok=%v", c.name, d, c.ok)
		}
	}
	ok, _ := readmetest.Parse("guide.md", []byte("<!-- example -->\n```sh\ncountersctl get a   # => 1\n```\n"))
	if doc, _ := ok[0].Documented(); readmetest.CompareCommand(doc, readmetest.Answer{Exit: 2, Body: "1\n"}) == "" {
		t.Error("an exit status other than 0, undocumented, passes")
	}
}

func TestSettingsAreReadFromTheFilesOneSettingsLine(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
		ok               bool
	}{
		{"none", "# Guide\n", "", true},
		{"one line", "# Guide\n<!-- examples: COUNTERS_A=true COUNTERS_B=2 -->\n", "COUNTERS_A=true COUNTERS_B=2", true},
		{"two lines", "<!-- examples: COUNTERS_A=true -->\n<!-- examples: COUNTERS_B=2 -->\n", "", false},
		{"no assignment", "<!-- examples: allow private -->\n", "", false},
	} {
		got, err := readmetest.Settings("guide.md", []byte(c.text))
		if (err == nil) != c.ok || strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q, %v; want %q, ok=%v", c.name, got, err, c.want, c.ok)
		}
	}
}
