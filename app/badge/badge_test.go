package badge_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/app/badge"
)

// parsed is what a badge looks like to an XML reader.
type parsed struct {
	root     xml.StartElement
	elements []string            // local names, in document order
	title    string              // text of <title>
	texts    []string            // text of each <text> element
	attrs    []map[string]string // attributes of each <text> element
	fills    []string            // fill of each drawn <rect> (not the clip path's)
}

// parse runs a strict encoding/xml decoder over the whole document and fails
// the test if it is not well-formed.
func parse(t *testing.T, doc []byte) parsed {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var p parsed
	var stack []string
	var cur *strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("badge is not well-formed XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				p.root = tok.Copy()
			}
			stack = append(stack, tok.Name.Local)
			p.elements = append(p.elements, tok.Name.Local)
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = a.Value
			}
			switch tok.Name.Local {
			case "text", "title":
				cur = &strings.Builder{}
				if tok.Name.Local == "text" {
					p.attrs = append(p.attrs, attrs)
				}
			case "rect":
				if f, ok := attrs["fill"]; ok && stack[len(stack)-2] != "clipPath" {
					p.fills = append(p.fills, f)
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.Write(tok)
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "text":
				p.texts = append(p.texts, cur.String())
				cur = nil
			case "title":
				p.title = cur.String()
				cur = nil
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 || p.root.Name.Local == "" {
		t.Fatalf("badge document is incomplete:\n%s", doc)
	}
	return p
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func width(t *testing.T, p parsed) int {
	t.Helper()
	w, err := strconv.Atoi(attr(p.root, "width"))
	if err != nil {
		t.Fatalf("svg width: %v", err)
	}
	return w
}

func TestRenderProducesWellFormedSVG(t *testing.T) {
	cases := map[string]badge.Options{
		"plain":           {Label: "hits", Value: "1,234"},
		"empty label":     {Value: "42"},
		"empty value":     {Label: "hits"},
		"both empty":      {},
		"non-ASCII":       {Label: "Besucher äöü", Value: "١٢٣"},
		"missing glyphs":  {Label: "访问 🎉", Value: "7"},
		"markup":          {Label: `<a href="x">&amp;</a>`, Value: `]]><!--`},
		"invalid UTF-8":   {Label: "a\xffb", Value: "\xc3"},
		"control chars":   {Label: "a\x00b\x1b\x7f", Value: "1\u0085\n2"},
		"non-characters":  {Label: "\uFFFE\uFFFF", Value: "1"},
		"colours":         {Label: "x", Value: "y", Color: "abc", LabelColor: "#123456"},
		"invalid colours": {Label: "x", Value: "y", Color: `"/><script>`, LabelColor: "nope"},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			p := parse(t, badge.Render(o))
			if p.root.Name.Local != "svg" || p.root.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root element = %v, want svg in the SVG namespace", p.root.Name)
			}
			if got := attr(p.root, "height"); got != "20" {
				t.Errorf("height = %q, want 20", got)
			}
			if got := attr(p.root, "role"); got != "img" {
				t.Errorf("role = %q, want img", got)
			}
		})
	}
}

func TestRenderShowsLabelAndValue(t *testing.T) {
	cases := []struct {
		name         string
		opts         badge.Options
		title        string
		visibleTexts []string // label then value, each drawn twice (shadow, text)
	}{
		{"label and value", badge.Options{Label: "hits", Value: "12,345"}, "hits: 12,345", []string{"hits", "hits", "12,345", "12,345"}},
		{"value only", badge.Options{Value: "7"}, "7", []string{"7", "7"}},
		{"spaces kept", badge.Options{Label: "page views", Value: "1 000"}, "page views: 1 000", []string{"page views", "page views", "1 000", "1 000"}},
		{"unicode", badge.Options{Label: "Zähler", Value: "−5"}, "Zähler: −5", []string{"Zähler", "Zähler", "−5", "−5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, badge.Render(c.opts))
			if p.title != c.title {
				t.Errorf("title = %q, want %q", p.title, c.title)
			}
			if got := attr(p.root, "aria-label"); got != c.title {
				t.Errorf("aria-label = %q, want %q", got, c.title)
			}
			if strings.Join(p.texts, "|") != strings.Join(c.visibleTexts, "|") {
				t.Errorf("texts = %q, want %q", p.texts, c.visibleTexts)
			}
			for i, a := range p.attrs {
				if i%2 == 0 && a["aria-hidden"] != "true" {
					t.Errorf("shadow text %d is not aria-hidden", i)
				}
			}
		})
	}
}

func TestRenderEscapesMarkupInText(t *testing.T) {
	attacks := []string{
		"</text><script>alert(1)</script>",
		`"><script>alert(1)</script><x a="`,
		`' onload='alert(1)`,
		"<SCRIPT>alert(1)</SCRIPT>",
		"]]><script>alert(1)</script>",
		"<!-- --><script>alert(1)</script>",
		"&lt;script&gt;",
		`<?xml-stylesheet href="evil.xsl"?>`,
	}
	allowed := map[string]bool{"svg": true, "title": true, "linearGradient": true, "stop": true, "clipPath": true, "rect": true, "g": true, "text": true}
	for _, s := range attacks {
		for _, o := range []badge.Options{{Label: s, Value: "1"}, {Label: "hits", Value: s}} {
			t.Run(s, func(t *testing.T) {
				doc := badge.Render(o)
				if bytes.Contains(bytes.ToLower(doc), []byte("<script")) {
					t.Fatalf("raw badge contains <script:\n%s", doc)
				}
				p := parse(t, doc)
				for _, e := range p.elements {
					if !allowed[e] {
						t.Errorf("unexpected element <%s> in badge:\n%s", e, doc)
					}
				}
				// The attack is shown as text, character for character.
				want := o.Label + ": " + o.Value
				if p.title != want {
					t.Errorf("title = %q, want %q", p.title, want)
				}
				if got := attr(p.root, "aria-label"); got != want {
					t.Errorf("aria-label = %q, want %q", got, want)
				}
				if !strings.Contains(strings.Join(p.texts, "\x00"), s) {
					t.Errorf("texts %q do not show %q", p.texts, s)
				}
			})
		}
	}
}

func TestRenderReplacesTextXMLCannotCarry(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a\xffb", "a\uFFFDb"},
		{"a\x00b", "a\uFFFDb"},
		{"tab\there", "tab\uFFFDhere"},
		{"\u0085", "\uFFFD"},
		{"\uFFFE", "\uFFFD"},
	}
	for _, c := range cases {
		t.Run(strconv.Quote(c.in), func(t *testing.T) {
			p := parse(t, badge.Render(badge.Options{Label: "l", Value: c.in}))
			if got := p.texts[len(p.texts)-1]; got != c.want {
				t.Errorf("value drawn as %q, want %q", got, c.want)
			}
		})
	}
}

func TestRenderWidthGrowsWithText(t *testing.T) {
	prev := 0
	for n := 1; n <= 30; n++ {
		p := parse(t, badge.Render(badge.Options{Label: "hits", Value: strings.Repeat("8", n)}))
		w := width(t, p)
		if w <= prev {
			t.Fatalf("%d digits: width %d, not wider than %d for %d digits", n, w, prev, n-1)
		}
		prev = w
	}
}

func TestRenderMeasuresGlyphWidths(t *testing.T) {
	measure := func(s string) (box int, textLength float64) {
		p := parse(t, badge.Render(badge.Options{Value: s}))
		tl, err := strconv.ParseFloat(p.attrs[1]["textLength"], 64)
		if err != nil {
			t.Fatalf("textLength of %q: %v", s, err)
		}
		return width(t, p), tl
	}
	wideBox, wide := measure("WWW")
	narrowBox, narrow := measure("iii")
	if wideBox <= narrowBox || wide <= 2*narrow {
		t.Errorf(`"WWW" box %d textLength %v, "iii" box %d textLength %v: want WWW far wider`, wideBox, wide, narrowBox, narrow)
	}
	// Verdana at 11px as shields measures it (anafanafo): W is 10.88 wide,
	// i 3.02; the sum floored and rounded up to an odd number of pixels.
	for _, c := range []struct {
		s    string
		want float64
	}{{"WWW", 33}, {"iii", 9}} {
		if _, got := measure(c.s); got != c.want {
			t.Errorf("textLength of %q = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestRenderColours(t *testing.T) {
	cases := []struct {
		name       string
		opts       badge.Options
		labelFill  string
		valueFill  string
		valueColor string // fill of the value's text
	}{
		{"defaults", badge.Options{Label: "a", Value: "b"}, badge.DefaultLabelColor, badge.DefaultColor, "#fff"},
		{"named", badge.Options{Label: "a", Value: "b", Color: "orange", LabelColor: "blue"}, "#007ec6", "#fe7d37", "#fff"},
		{"hex", badge.Options{Label: "a", Value: "b", Color: "#ABC", LabelColor: "123456"}, "#123456", "#aabbcc", "#333"},
		{"light background gets dark text", badge.Options{Label: "a", Value: "b", Color: "fff"}, badge.DefaultLabelColor, "#ffffff", "#333"},
		{"invalid falls back", badge.Options{Label: "a", Value: "b", Color: `red"/>`, LabelColor: "url(#x)"}, badge.DefaultLabelColor, badge.DefaultColor, "#fff"},
		{"CSS name", badge.Options{Label: "a", Value: "b", Color: "purple", LabelColor: "rebeccapurple"}, "#663399", "#800080", "#fff"},
		{"translucent", badge.Options{Label: "a", Value: "b", Color: "rgba(255, 255, 255, .5)", LabelColor: "#0008"}, "rgba(0,0,0,0.533)", "rgba(255,255,255,0.5)", "#333"},
		{"light hsl gets dark text", badge.Options{Label: "a", Value: "b", Color: "hsl(60,100%,90%)"}, badge.DefaultLabelColor, "#ffffcc", "#333"},
		{"markup after a colour falls back", badge.Options{Label: "a", Value: "b", Color: `rgb(1,2,3)"/><script>`}, badge.DefaultLabelColor, badge.DefaultColor, "#fff"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, badge.Render(c.opts))
			if len(p.fills) != 3 || p.fills[0] != c.labelFill || p.fills[1] != c.valueFill {
				t.Errorf("rect fills = %q, want [%s %s url(#s)]", p.fills, c.labelFill, c.valueFill)
			}
			if got := p.attrs[3]["fill"]; got != c.valueColor {
				t.Errorf("value text fill = %q, want %q", got, c.valueColor)
			}
		})
	}
}

func TestParseColor(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"brightgreen", "#44cc11", true},
		{"green", "#97ca00", true},
		{"yellowgreen", "#a4a61d", true},
		{"yellow", "#dfb317", true},
		{"orange", "#fe7d37", true},
		{"red", "#e05d44", true},
		{"blue", "#007ec6", true},
		{"lightgrey", "#9f9f9f", true},
		{"lightgray", "#9f9f9f", true},
		{"grey", "#555555", true},
		{"gray", "#555555", true},
		{"success", "#44cc11", true},
		{"important", "#fe7d37", true},
		{"critical", "#e05d44", true},
		{"informational", "#007ec6", true},
		{"inactive", "#9f9f9f", true},
		{"BrightGreen", "#44cc11", true},
		{"#abc", "#aabbcc", true},
		{"abc", "#aabbcc", true},
		{"#aabbcc", "#aabbcc", true},
		{"AABBCC", "#aabbcc", true},
		{"#0f0F0f", "#0f0f0f", true},
		{"", "", false},
		{"#", "", false},
		{"#ab", "", false},
		{"abcd", "", false},
		{"#ggg", "", false},
		{"##abc", "", false},
		{" red", "", false},
		{`"/><script>`, "", false},

		// Any CSS colour, as shields accepts it (badge-maker's isCSSColor).
		{"purple", "#800080", true},
		{"RebeccaPurple", "#663399", true},
		{"lightgoldenrodyellow", "#fafad2", true},
		{"#aabbccdd", "rgba(170,187,204,0.867)", true},
		{"#abcf", "#aabbcc", true},
		{"#abc8", "rgba(170,187,204,0.533)", true},
		{"rgb(0,0,0)", "#000000", true},
		{"rgb(255, 128, 0)", "#ff8000", true},
		{"RGB(1,2,3)", "#010203", true},
		{"rgba(1,2,3)", "#010203", true},
		{"rgb(1,2,3,0.5)", "rgba(1,2,3,0.5)", true},
		{"rgba(1, 2, 3, .25)", "rgba(1,2,3,0.25)", true},
		{"rgba(1,2,3,50%)", "rgba(1,2,3,0.5)", true},
		{"rgba(1,2,3,0)", "rgba(1,2,3,0)", true},
		{"rgba(1,2,3,1)", "#010203", true},
		{"rgb(1 2 3)", "#010203", true},
		{"rgb(1 2 3 / 0.5)", "rgba(1,2,3,0.5)", true},
		{"rgb(100%,50%,0%)", "#ff8000", true},
		{"rgb(300,0,0)", "#ff0000", true},
		{"rgb(99999999999999999999999,0,0)", "#ff0000", true},
		{"hsl(0,100%,50%)", "#ff0000", true},
		{"hsl(120, 100%, 25%)", "#008000", true},
		{"hsl(240deg,100%,50%)", "#0000ff", true},
		{"hsl(0.5turn,100%,50%)", "", false},
		{"hsl(1turn,100%,50%)", "#ff0000", true},
		{"hsl(200grad,100%,50%)", "#00ffff", true},
		{"hsl(480,100%,50%)", "#00ff00", true},
		{"hsla(0,0%,100%,.5)", "rgba(255,255,255,0.5)", true},

		// Not colours, or not written as shields reads them.
		{"notacolour", "", false},
		{"transparent", "", false},
		{"currentcolor", "", false},
		{"aabbccdd", "", false},
		{"rgb(1,2)", "", false},
		{"rgb(1,2,3,4)", "", false},
		{"rgb(1,2,3", "", false},
		{"rgb(1,2,3))", "", false},
		{"rgb(1,2,3) ", "", false},
		{"rgb(1 2,3)", "", false},
		{"rgb(1,2 3)", "", false},
		{"rgb(1 2 3, 0.5)", "", false},
		{"rgb(1,2,3 / 0.5)", "", false},
		{"rgb(1,2%,3)", "", false},
		{"rgb(1.5,2,3)", "", false},
		{"rgb(-1,2,3)", "", false},
		{"rgb(1,2,3,1.5)", "", false},
		{"rgb(1,2,3,00.5)", "", false},
		{"rgb(1,2,3,.)", "", false},
		{"rgb(1,2,3,%)", "", false},
		{"rgb(1e2,2,3)", "", false},
		{"rgb(1,2,calc(3))", "", false},
		{"rgb(var(--x))", "", false},
		{"rgb(1,2,3)\"/><script>", "", false},
		{"rgb(1,2,3);fill:url(#x)", "", false},
		{"hsl(0,100,50)", "", false},
		{"hsl(0deg 100% 50%)", "", false},
		{"hsl(0,100%,50%,2)", "", false},
		{"hwb(0 0% 0%)", "", false},
		{"url(#x)", "", false},
		{"red;", "", false},
		{"#ab\"", "", false},
		{strings.Repeat("a", 65), "", false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := badge.ParseColor(c.in)
			if c.ok && (err != nil || got != c.want) {
				t.Errorf("ParseColor(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			if !c.ok && err == nil {
				t.Errorf("ParseColor(%q) = %q, want an error", c.in, got)
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	cases := []struct {
		v      int64
		format string
		want   string
	}{
		{12345, "", "12345"},
		{12345, "plain", "12345"},
		{-12345, "plain", "-12345"},
		{math.MaxInt64, "plain", "9223372036854775807"},
		{math.MinInt64, "plain", "-9223372036854775808"},

		{0, "comma", "0"},
		{999, "comma", "999"},
		{1000, "comma", "1,000"},
		{12345, "comma", "12,345"},
		{-12345, "comma", "-12,345"},
		{-999, "comma", "-999"},
		{123456, "comma", "123,456"},
		{-1234567, "comma", "-1,234,567"},
		{math.MaxInt64, "comma", "9,223,372,036,854,775,807"},
		{math.MinInt64, "comma", "-9,223,372,036,854,775,808"},

		{12345, "space", "12 345"},
		{-100000, "space", "-100 000"},
		{math.MinInt64, "space", "-9 223 372 036 854 775 808"},

		{0, "short", "0"},
		{999, "short", "999"},
		{-999, "short", "-999"},
		{1000, "short", "1k"},
		{1049, "short", "1k"},
		{1050, "short", "1.1k"},
		{1234, "short", "1.2k"},
		{-1234, "short", "-1.2k"},
		{9949, "short", "9.9k"},
		{9950, "short", "10k"},
		{12345, "short", "12k"},
		{12500, "short", "13k"},
		{999499, "short", "999k"},
		{999500, "short", "1M"},
		{1234567, "short", "1.2M"},
		{-1234567, "metric", "-1.2M"},
		{1e9, "metric", "1G"},
		{2.5e12, "metric", "2.5T"},
		{1e15, "metric", "1P"},
		{1e18, "metric", "1E"},
		{math.MaxInt64, "short", "9.2E"},
		{math.MinInt64, "short", "-9.2E"},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+strconv.FormatInt(c.v, 10), func(t *testing.T) {
			got, err := badge.FormatValue(c.v, c.format)
			if err != nil || got != c.want {
				t.Errorf("FormatValue(%d, %q) = %q, %v; want %q", c.v, c.format, got, err, c.want)
			}
		})
	}
	for _, f := range []string{"Comma", "thousands", "k", " plain"} {
		if got, err := badge.FormatValue(1, f); err == nil {
			t.Errorf("FormatValue(1, %q) = %q, want an error", f, got)
		}
	}
}

func TestValidateLabel(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"empty", "", true},
		{"ascii", "hits", true},
		{"spaces and punctuation", "page views (total)", true},
		{"unicode", "Besucher 访问 🎉", true},
		{"markup is fine, it is escaped", "</text><script>", true},
		{"64 runes", strings.Repeat("ä", 64), true},
		{"65 runes", strings.Repeat("a", 65), false},
		{"invalid UTF-8", "a\xffb", false},
		{"NUL", "a\x00b", false},
		{"newline", "a\nb", false},
		{"DEL", "a\x7fb", false},
		{"C1 control", "a\u0085b", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := badge.ValidateLabel(c.in)
			if c.ok && err != nil {
				t.Errorf("ValidateLabel(%q) = %v, want nil", c.in, err)
			}
			if !c.ok && err == nil {
				t.Errorf("ValidateLabel(%q) = nil, want an error", c.in)
			}
		})
	}
}

// Badges are drawn concurrently, and the first ones load the shared width
// tables: with -race this proves both safe.
func TestRenderIsSafeForConcurrentUse(t *testing.T) {
	want := badge.Render(badge.Options{Label: "Zähler 访问", Value: "1 234 €"})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if got := badge.Render(badge.Options{Label: "Zähler 访问", Value: "1 234 €"}); !bytes.Equal(got, want) {
					t.Error("concurrent Render gave a different badge")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkRender(b *testing.B) {
	o := badge.Options{Label: "hits", Value: "12,345", Color: "blue"}
	b.ReportAllocs()
	for b.Loop() {
		badge.Render(o)
	}
}

// Each of shields' styles draws a well-formed badge of its height; an
// unknown style is drawn as flat.
func TestRenderStyles(t *testing.T) {
	tests := []struct {
		style  string
		height string
		upper  bool
	}{
		{"", "20", false},
		{"flat", "20", false},
		{"flat-square", "20", false},
		{"plastic", "18", false},
		{"for-the-badge", "28", true},
		{"unknown", "20", false},
	}
	for _, tc := range tests {
		svg := string(badge.Render(badge.Options{Label: "hits", Value: "1.2k", Style: tc.style}))
		if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
			t.Errorf("style %q: not well-formed: %v", tc.style, err)
		}
		if !strings.Contains(svg, `height="`+tc.height+`" role="img"`) {
			t.Errorf("style %q: want height %s in %s", tc.style, tc.height, svg)
		}
		if got := strings.Contains(svg, ">HITS<"); got != tc.upper {
			t.Errorf("style %q: capitals %v, want %v", tc.style, got, tc.upper)
		}
		if square := tc.style == "flat-square" || tc.style == "for-the-badge"; strings.Contains(svg, `rx="`) == square {
			t.Errorf("style %q: rounded corners %v, want %v", tc.style, !square, square)
		}
	}
}

// Whatever a colour parameter holds, an accepted colour reaches the SVG only
// as "#rrggbb" or "rgba(r,g,b,a)" rebuilt from numbers. The seeds run with
// every go test; go test -fuzz FuzzParseColor explores further.
func FuzzParseColor(f *testing.F) {
	for _, s := range []string{"purple", "#abc", "abc", "#aabbccdd", "rgb(1,2,3)", "rgba(1 2 3 / 50%)", "hsla(10turn,5%,5%,.5)",
		`rgb(1,2,3)"/><script>`, "rgb(1,2,3,0.5)\x00", "hsl(1e9,100%,50%)", "RGB(300,300,300)", "rgba(1,2,3,.999999)"} {
		f.Add(s)
	}
	safe := regexp.MustCompile(`^(#[0-9a-f]{6}|rgba\((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9]),(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9]),(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9]),(0|0\.[0-9]{1,3}|1)\))$`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := badge.ParseColor(s)
		if err == nil && !safe.MatchString(got) {
			t.Fatalf("ParseColor(%q) = %q, not a rebuilt colour", s, got)
		}
	})
}
