// Package readmetest reads the worked examples out of the project's
// markdown (README.md and every guide in docs/), so that a test can run them
// against a real service and hold every documented answer to the real one.
// It knows the conventions and nothing of HTTP.
//
// The conventions, the same in every markdown file:
//
//   - A line <!-- examples: NAME=value ... --> names settings of the
//     service the file's examples run against (as scripts/run takes them
//     from the environment); the file says so in words too.
//   - An example block is a ```sh fence on the line after <!-- example -->.
//     The example blocks of one file run top to bottom in one shell session,
//     against a service of their own that starts empty: a variable set in
//     one (B=..., export T=..., SECRET=$(curl ...)) is set once and holds in
//     the later ones of the same file, and what one file counts no other
//     file sees.
//   - In an example block a line starting with "curl" or "countersctl" is
//     a request (a trailing backslash continues it), a line like NAME=value
//     or export NAME=value sets variables, a line starting with # is a
//     comment. A countersctl request must exit 0, and its documented answer
//     is what it prints, read as text (or JSON when it starts with { or [):
//     a number there is a value, never a status.
//   - "# => " starts the documented answer of the request before it, at the
//     end of the request's line or on lines of its own after it:
//     "# => 201 {...}" is a status and a JSON body, "# => 204" a status
//     alone, "# => {...}" a body alone; with curl -i, "# => HTTP/1.1 200 OK"
//     is the status and "# => Name: value" a header the answer must carry.
//     In a JSON body, the string "..." stands for any value, and ... as a
//     member of an object or an element of an array for any further ones
//     (first in an array, for any before the last ones documented).
//   - A countersctl request's documented answer may end with
//     "# => stderr: ..." (what it writes on stderr) and "# => exit status N"
//     (without it, the request must exit 0).
//   - A request without a documented status must succeed (2xx).
//   - An answer is never written in a block that is not marked: a comment
//     there that reads like one ("# {...}", "# [...", "# HTTP/1.1 ...",
//     "# 404 ...", "# stderr: ...") is an error, since no test would hold
//     it to the real answer. Mark the block, or say it in words.
//   - An example never contacts a third party: a URL outside a header
//     argument (-H, -A, -e), or an IP address, names this machine
//     (localhost, 127.0.0.0/8, ::1).
package readmetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Marker is the line that makes the next ```sh block an example block.
const Marker = "<!-- example -->"

// answerMark starts a documented answer.
const answerMark = "# =>"

// Example is one request of an example block.
type Example struct {
	File    string   // the markdown file, as Parse was told its name
	Line    int      // of File, where the request starts
	Setup   []string // the variable lines since the request before (of this file), run before this one
	Command string   // the curl command, its continuation lines joined by newlines
	Answer  []string // the documented answer's lines, without "# =>"
}

var assignment = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=`)

// Parse returns the requests of the example blocks of a markdown file in
// order; file is the name its examples and errors carry. A line it cannot
// place, or an answer outside an example block, is an error naming the file
// and line: an example the test would silently skip is worse than none.
func Parse(file string, text []byte) ([]Example, error) {
	var (
		examples []Example
		setup    []string
		inBlock  bool // inside a fence
		shell    bool // ... of shell lines
		example  bool // ... of an example block
		marked   bool // the previous line was the marker
		cont     bool // the previous line ended with a backslash
		owner    = -1 // the example that answer lines belong to, -1 for none
		setupRun bool // the previous line was a continued assignment
	)
	lines := strings.Split(string(text), "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(line)
		if !inBlock {
			if strings.HasPrefix(trimmed, "```") {
				inBlock, example = true, marked && trimmed == "```sh"
				shell = slices.Contains([]string{"```sh", "```bash", "```console", "```shell"}, trimmed)
				if marked && !example {
					return nil, fmt.Errorf("%s:%d: %s must be followed by a ```sh fence", file, n, Marker)
				}
				owner = -1
			}
			marked = trimmed == Marker
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			if cont {
				return nil, fmt.Errorf("%s:%d: the block ends inside a continued line", file, n)
			}
			inBlock = false
			continue
		}
		if !example {
			if strings.Contains(line, answerMark) || shell && writtenOutput.MatchString(line) {
				return nil, fmt.Errorf("%s:%d: an answer in a block that is not marked %s, which no test holds to the real one: mark the block, or say it in words", file, n, Marker)
			}
			continue
		}
		if cont { // a continued request or assignment
			if setupRun {
				setup[len(setup)-1] += "\n" + line
				cont = continues(setup[len(setup)-1])
			} else {
				examples[owner].Command += "\n" + line
				cont = continues(examples[owner].Command)
			}
			continue
		}
		switch {
		case trimmed == "":
			owner = -1
		case strings.HasPrefix(trimmed, answerMark):
			if owner < 0 {
				return nil, fmt.Errorf("%s:%d: an answer that follows no request", file, n)
			}
			examples[owner].Answer = append(examples[owner].Answer, strings.TrimSpace(strings.TrimPrefix(trimmed, answerMark)))
		case strings.HasPrefix(trimmed, "#"):
			owner = -1
		case strings.HasPrefix(trimmed, "curl ") || IsCountersctl(trimmed):
			cmd, answer, found := strings.Cut(line, " "+answerMark)
			ex := Example{File: file, Line: n, Setup: setup, Command: strings.TrimRight(cmd, " ")}
			setup = nil
			if found {
				ex.Answer = []string{strings.TrimSpace(answer)}
			}
			examples = append(examples, ex)
			owner, setupRun = len(examples)-1, false
			cont = !found && continues(ex.Command)
		case assignment.MatchString(trimmed):
			setup = append(setup, line)
			owner, setupRun = -1, true
			cont = continues(line)
		default:
			return nil, fmt.Errorf("%s:%d: %q is neither a request, an assignment, an answer nor a comment", file, n, trimmed)
		}
	}
	if inBlock {
		return nil, fmt.Errorf("%s: a fence is never closed", file)
	}
	for _, ex := range examples {
		for _, text := range append(slices.Clip(ex.Setup), ex.Command) {
			if hosts := ThirdParty(text); len(hosts) > 0 {
				return nil, fmt.Errorf("%s:%d: names %s, not this machine: an example must never contact a third party (use localhost or 127.0.0.1)", file, ex.Line, strings.Join(hosts, ", "))
			}
		}
	}
	return examples, nil
}

// writtenOutput is a shell comment that reads like an answer: a JSON
// value, a status line or a status, or what a command wrote on stderr.
var writtenOutput = regexp.MustCompile(`(^|\s)#\s*(\{|\[|HTTP/[0-9]|[1-5][0-9][0-9]\b|stderr:|exit status)`)

var (
	// headerArg is an argument of curl's that is text sent, not a place
	// contacted: a header, a User-Agent, a Referer.
	headerArg = regexp.MustCompile(`(^|\s)(-H|--header|-A|--user-agent|-e|--referer)\s+("[^"]*"|'[^']*'|\S+)`)
	urlHost   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'\\/]+`)
	ipv4      = regexp.MustCompile(`\b[0-9]{1,3}(\.[0-9]{1,3}){3}\b`)
)

// ThirdParty returns the hosts a shell line names that are not this
// machine, where curl or the service would contact them: the host of a
// URL outside a header argument, and any IP address. A name that is not
// localhost counts, whatever it resolves to today.
func ThirdParty(text string) []string {
	text = headerArg.ReplaceAllString(text, " ")
	var hosts []string
	for _, m := range urlHost.FindAllString(text, -1) {
		u, err := url.Parse(m)
		if err != nil || u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "$") {
			continue // $B and the like: set by a line this check reads too
		}
		if !loopback(u.Hostname()) {
			hosts = append(hosts, u.Hostname())
		}
	}
	for _, m := range ipv4.FindAllString(text, -1) {
		if !loopback(m) && !slices.Contains(hosts, m) {
			hosts = append(hosts, m)
		}
	}
	return hosts
}

func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// settingsMark starts the line that names the settings a file's examples
// run with: <!-- examples: COUNTERS_X=y COUNTERS_Z=w -->.
const settingsMark = "<!-- examples: "

// Settings returns the NAME=value settings the service of a file's
// examples runs with, from its settings line; none when it has none.
func Settings(file string, text []byte) ([]string, error) {
	var settings []string
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, settingsMark) {
			continue
		}
		fields, ok := strings.CutSuffix(strings.TrimPrefix(line, settingsMark), " -->")
		if !ok || settings != nil {
			return nil, fmt.Errorf("%s:%d: one line %sNAME=value ... --> per file", file, i+1, settingsMark)
		}
		settings = strings.Fields(fields)
		for _, f := range settings {
			if !assignment.MatchString(f) {
				return nil, fmt.Errorf("%s:%d: %q is no NAME=value", file, i+1, f)
			}
		}
	}
	return settings, nil
}

// IsCountersctl reports whether a request runs countersctl rather than curl.
func IsCountersctl(command string) bool {
	return strings.HasPrefix(strings.TrimSpace(command), "countersctl ")
}

// continues reports whether the shell reads on after this text: it ends
// with a backslash, or inside quotes (a JSON body over several lines).
func continues(text string) bool {
	var quote byte
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			if i == len(text)-1 {
				return true
			}
			i++
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || text[i-1] == ' '):
			// A comment runs to the end of its line.
			for i < len(text) && text[i] != '\n' {
				i++
			}
		}
	}
	return quote != 0
}

// Answer is a documented or a real answer.
type Answer struct {
	Status  int // 0 when not documented
	Headers [][2]string
	Body    string
	// A countersctl line's: its exit status and what it wrote on stderr
	// ("" when not documented).
	Exit   int
	Stderr string
}

var (
	statusLine = regexp.MustCompile(`^HTTP/[0-9.]+ ([0-9]{3})\b`)
	bareStatus = regexp.MustCompile(`^([0-9]{3})(\s+|$)`)
	headerLine = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*):\s*(.*)$`)
)

// Documented is the example's documented answer. A countersctl line's is
// the text it prints, whatever that starts with: a value of 404, or a
// board "201<TAB>ROCK", is no status; then what it writes on stderr and
// its exit status, each on a line of its own.
func (ex Example) Documented() (Answer, error) {
	if !IsCountersctl(ex.Command) {
		return ParseDocumented(ex.Answer)
	}
	var a Answer
	var body, stderr []string
	for _, l := range ex.Answer {
		switch m := exitLine.FindStringSubmatch(l); {
		case m != nil:
			a.Exit, _ = strconv.Atoi(m[1])
		case strings.HasPrefix(l, stderrMark):
			stderr = append(stderr, strings.TrimPrefix(l, stderrMark))
		case len(stderr) > 0:
			return a, fmt.Errorf("the printed answer %q follows what it wrote on stderr", l)
		default:
			body = append(body, l)
		}
	}
	a.Body, a.Stderr = strings.Join(body, "\n"), strings.Join(stderr, "\n")
	return a, nil
}

// stderrMark starts a line a countersctl request writes on stderr.
const stderrMark = "stderr: "

var exitLine = regexp.MustCompile(`^exit status ([0-9]+)$`)

// CompareCommand holds what a countersctl request did to the documented
// answer: its exit status, its stderr when documented, and what it
// printed, and says how they differ, or "".
func CompareCommand(doc, got Answer) string {
	var diffs []string
	if got.Exit != doc.Exit {
		diffs = append(diffs, fmt.Sprintf("exit status %d, documented %d (stderr: %s)", got.Exit, doc.Exit, strings.TrimSpace(got.Stderr)))
	}
	if doc.Stderr != "" && strings.TrimSpace(got.Stderr) != doc.Stderr {
		diffs = append(diffs, fmt.Sprintf("stderr %q, documented %q", strings.TrimSpace(got.Stderr), doc.Stderr))
	}
	if doc.Body != "" || doc.Stderr != "" {
		if d := compareBody(doc.Body, got.Body); d != "" {
			diffs = append(diffs, d)
		}
	}
	return strings.Join(diffs, "; ")
}

// ParseDocumented reads a curl example's answer lines.
func ParseDocumented(lines []string) (Answer, error) {
	var a Answer
	var body []string
	for _, l := range lines {
		switch m := statusLine.FindStringSubmatch(l); {
		case len(body) > 0:
			body = append(body, l)
		case m != nil:
			a.Status, _ = strconv.Atoi(m[1])
		case a.Status == 0 && len(a.Headers) == 0 && bareStatus.MatchString(l):
			m := bareStatus.FindStringSubmatch(l)
			a.Status, _ = strconv.Atoi(m[1])
			if rest := strings.TrimSpace(l[len(m[0]):]); rest != "" {
				body = append(body, rest)
			}
		case headerLine.MatchString(l) && !strings.HasPrefix(l, "{"):
			m := headerLine.FindStringSubmatch(l)
			a.Headers = append(a.Headers, [2]string{m[1], m[2]})
		default:
			body = append(body, l)
		}
	}
	a.Body = strings.Join(body, "\n")
	return a, nil
}

// ParseReceived reads what curl printed: with -i the status line and
// headers come first; status is the one curl reported for the exchange.
func ParseReceived(out []byte, status int) Answer {
	a := Answer{Status: status, Body: string(out)}
	if !bytes.HasPrefix(out, []byte("HTTP/")) {
		return a
	}
	s := strings.ReplaceAll(string(out), "\r\n", "\n")
	head, body, _ := strings.Cut(s, "\n\n")
	for _, l := range strings.Split(head, "\n")[1:] {
		if m := headerLine.FindStringSubmatch(l); m != nil {
			a.Headers = append(a.Headers, [2]string{m[1], m[2]})
		}
	}
	a.Body = body
	return a
}

// Compare holds a real answer to the documented one and says how they
// differ, or "".
func Compare(doc, got Answer) string {
	var diffs []string
	switch {
	case doc.Status != 0 && got.Status != doc.Status:
		diffs = append(diffs, fmt.Sprintf("status %d, documented %d", got.Status, doc.Status))
	case doc.Status == 0 && (got.Status < 200 || got.Status > 299):
		diffs = append(diffs, fmt.Sprintf("status %d, and a request without a documented status must succeed", got.Status))
	}
	for _, h := range doc.Headers {
		if v, ok := header(got.Headers, h[0]); !ok || v != h[1] {
			diffs = append(diffs, fmt.Sprintf("header %s: %q, documented %q", h[0], v, h[1]))
		}
	}
	if doc.Body != "" {
		if d := compareBody(doc.Body, got.Body); d != "" {
			diffs = append(diffs, d)
		}
	}
	return strings.Join(diffs, "; ")
}

func header(hs [][2]string, name string) (string, bool) {
	for _, h := range hs {
		if strings.EqualFold(h[0], name) {
			return h[1], true
		}
	}
	return "", false
}

func compareBody(doc, got string) string {
	doc, got = strings.TrimSpace(doc), strings.TrimSpace(got)
	if !strings.HasPrefix(doc, "{") && !strings.HasPrefix(doc, "[") {
		if doc != got {
			return fmt.Sprintf("body %q, documented %q", got, doc)
		}
		return ""
	}
	want, err := decode(expandEllipses(doc))
	if err != nil {
		return fmt.Sprintf("the documented body is not JSON (%v): %s", err, doc)
	}
	have, err := decode(got)
	if err != nil {
		return fmt.Sprintf("body %q is not JSON: %v", got, err)
	}
	if d := match(want, have, "$"); d != "" {
		return fmt.Sprintf("body %s (%s); documented %s", got, d, doc)
	}
	return ""
}

func decode(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// more is what expandEllipses writes for a bare ...: a member name in an
// object, an element in an array.
const more, moreJSON = "\x00more", `"\u0000more"`

// anyValue is the documented string that matches any value.
const anyValue = "..."

// expandEllipses turns each ... outside a string, which JSON does not
// allow, into a member or an element named more.
func expandEllipses(s string) string {
	var b strings.Builder
	var stack []byte
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			stack = append(stack, c)
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case strings.HasPrefix(s[i:], "...") && len(stack) > 0:
			if stack[len(stack)-1] == '{' {
				b.WriteString(moreJSON + ":0")
			} else {
				b.WriteString(moreJSON)
			}
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// match reports where have differs from want, or "".
func match(want, have any, path string) string {
	if want == anyValue {
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path + ": not an object"
		}
		_, open := w[more]
		for k, wv := range w {
			if k == more {
				continue
			}
			hv, ok := h[k]
			if !ok {
				return path + "." + k + ": missing"
			}
			if d := match(wv, hv, path+"."+k); d != "" {
				return d
			}
		}
		for k := range h {
			if _, ok := w[k]; !ok && !open {
				return path + "." + k + ": not documented"
			}
		}
		return ""
	case []any:
		h, ok := have.([]any)
		if !ok {
			return path + ": not an array"
		}
		open := len(w) > 0 && w[len(w)-1] == more
		if open {
			w = w[:len(w)-1]
		}
		// [..., x] documents the last elements: the days before today.
		first := 0
		if tail := len(w) > 0 && w[0] == more; tail {
			w, open = w[1:], true
			first = max(len(h)-len(w), 0)
		}
		if len(h) < len(w) || (!open && len(h) != len(w)) {
			return fmt.Sprintf("%s: %d elements, documented %d", path, len(h), len(w))
		}
		for i := range w {
			if d := match(w[i], h[first+i], fmt.Sprintf("%s[%d]", path, first+i)); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(want, have) {
			return fmt.Sprintf("%s: %v, documented %v", path, have, want)
		}
		return ""
	}
}

// Documents returns the markdown files whose examples are held to the
// service, relative to the repository's root: README.md, then every .md
// file under docs/, in name order. A guide added to docs/ is run without
// anyone having to list it.
func Documents(root string) ([]string, error) {
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		docs = append(docs, filepath.ToSlash(rel))
		return err
	})
	return docs, err
}
