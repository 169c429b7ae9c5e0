package visitors

import (
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/x-way/crawlerdetect"
)

// crawlerTest answers crawlerdetect.IsCrawler exactly, at a fraction of its
// cost for an agent it has not seen. crawlerdetect first removes its
// exclusions (browser tokens: "Safari/537.36", "Windows NT 10.0", ...)
// from the agent with one regular expression of 53 alternatives, and then
// matches what is left against one of about 1,450; Go's regexp runs each
// as an NFA over every byte, which costs hundreds of µs an agent on this
// machine (BenchmarkBots), more than the rest of a page hit many times over.
// Here the exclusions are removed by trying, at each byte, only those
// alternatives that can start there, each as its own small anchored
// expression, in their order: the match the whole alternation would find
// (the leftmost, and there the first alternative that matches). What is
// left is then matched by the library's own alternation, remembered by what
// is left: agents that differ only in versions, build numbers and the
// like (a browser updating, a new device of a known family) leave the same
// rest.
//
// The lists are crawlerdetect's own, read from its default detector, so
// that an update of the module changes both alike. Where they cannot be
// read, or an exclusion is of a form this does not handle (one that can
// match nothing, or an assertion such as ^ or \b that would see a cut
// input), and for agents that are not ASCII (case folding then reaches
// beyond ASCII), it asks crawlerdetect itself. TestTheCrawlerTestAgreesWithCrawlerdetect
// holds the two to the same answers on the library's own test agents.
type crawlerTest struct {
	exclusions []exclusion
	starts     [256][]int     // the exclusions that can start with a byte
	crawlers   *regexp.Regexp // the library's alternation of crawler patterns
}

// exclusion is one alternative of the exclusions, anchored.
type exclusion struct {
	re     *regexp.Regexp
	prefix string // lower case: what every match starts with, checked first
}

// newCrawlerTest returns the fast test, or nil where only the library's
// own will do.
func newCrawlerTest() *crawlerTest {
	crawlers, exclusions, ok := crawlerdetectLists()
	if !ok {
		return nil
	}
	t := &crawlerTest{crawlers: regexp.MustCompile("(?i)(" + strings.Join(crawlers, "|") + ")")}
	for i, e := range exclusions {
		parsed, err := syntax.Parse("(?i)(?:"+e+")", syntax.Perl)
		if err != nil {
			return nil
		}
		first, nullable, ok := firstBytes(parsed.Simplify())
		if !ok || nullable {
			return nil
		}
		re, err := regexp.Compile(`^(?i)(?:` + e + `)`)
		if err != nil || re.MatchString("") {
			return nil
		}
		t.exclusions = append(t.exclusions, exclusion{re: re, prefix: literalPrefix(parsed.Simplify())})
		for b := range first {
			if first[b] {
				t.starts[b] = append(t.starts[b], i)
			}
		}
	}
	return t
}

// crawlerdetectLists reads the crawler patterns and the exclusions of
// crawlerdetect's default detector (unexported fields, read only).
func crawlerdetectLists() (crawlers, exclusions []string, ok bool) {
	v := reflect.ValueOf(crawlerdetect.New()).Elem()
	read := func(field string) []string {
		f := v.FieldByName(field)
		if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.String {
			return nil
		}
		out := make([]string, f.Len())
		for i := range out {
			out[i] = f.Index(i).String()
		}
		return out
	}
	crawlers, exclusions = read("crawlers"), read("exclusions")
	return crawlers, exclusions, len(crawlers) > 0 && len(exclusions) > 0
}

// rest is what crawlerdetect matches its crawler patterns against:
// userAgent trimmed, without its exclusions. ok is false for an agent that
// is not ASCII.
func (t *crawlerTest) rest(userAgent string) (string, bool) {
	s := strings.TrimSpace(userAgent)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	lower := strings.ToLower(s)
	var out []byte
	kept := 0 // s[kept:] has not been copied to out yet
	cut := false
	for p := 0; p < len(s); {
		end := -1
		for _, i := range t.starts[s[p]] {
			e := &t.exclusions[i]
			if !strings.HasPrefix(lower[p:], e.prefix) {
				continue
			}
			if m := e.re.FindStringIndex(s[p:]); m != nil {
				end = p + m[1]
				break
			}
		}
		if end < 0 {
			p++
			continue
		}
		out = append(out, s[kept:p]...)
		kept, p, cut = end, end, true
	}
	if !cut {
		return s, true
	}
	return string(append(out, s[kept:]...)), true
}

// firstBytes reports which bytes (of ASCII input) a match of re can start
// with, and whether it can be empty; ok is false for what it does not know
// (an assertion, a rune beyond ASCII).
func firstBytes(re *syntax.Regexp) (first [256]bool, nullable, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return first, true, true
		}
		r := re.Rune[0]
		if r >= 0x80 {
			return first, false, false
		}
		first[r] = true
		if re.Flags&syntax.FoldCase != 0 {
			first[toLowerASCII(byte(r))], first[toUpperASCII(byte(r))] = true, true
		}
		return first, false, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < 0x80; r++ {
				first[r] = true
			}
		}
		return first, false, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range 0x80 {
			first[b] = b != '\n' || re.Op == syntax.OpAnyChar
		}
		return first, false, true
	case syntax.OpEmptyMatch:
		return first, true, true
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		first, _, ok = firstBytes(re.Sub[0])
		return first, true, ok
	case syntax.OpRepeat:
		first, nullable, ok = firstBytes(re.Sub[0])
		return first, nullable || re.Min == 0, ok
	case syntax.OpConcat:
		return firstOfAll(re.Sub, true)
	case syntax.OpAlternate:
		return firstOfAll(re.Sub, false)
	}
	return first, false, false // assertions: ^, $, \b, ...
}

// firstOfAll is firstBytes of a concatenation of subs (each can start a
// match only while those before it can be empty), or of an alternation.
func firstOfAll(subs []*syntax.Regexp, concat bool) (first [256]bool, nullable, ok bool) {
	nullable = concat
	for _, sub := range subs {
		f, n, ok := firstBytes(sub)
		if !ok {
			return first, false, false
		}
		for b := range f {
			first[b] = first[b] || f[b]
		}
		if concat && !n {
			return first, false, true
		}
		nullable = nullable || n
	}
	return first, nullable, true
}

// literalPrefix is the lower-case literal every match of re starts with
// ("" when there is none), of a case-insensitive ASCII expression.
func literalPrefix(re *syntax.Regexp) string {
	for re.Op == syntax.OpCapture || re.Op == syntax.OpConcat && len(re.Sub) > 0 {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpLiteral {
		return ""
	}
	var b strings.Builder
	for _, r := range re.Rune {
		if r >= 0x80 {
			break
		}
		b.WriteByte(toLowerASCII(byte(r)))
	}
	return b.String()
}

func toLowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func toUpperASCII(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}
