package badge_test

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/countersvc/countersvc/app/badge"
)

// shieldsCase is one badge drawn by shields.io's badge-maker, from
// testdata/shields-widths.json (testdata/shields-reference.sh makes it).
type shieldsCase struct {
	Style, Label, Message, LabelColor string
	Width                             float64
	Texts                             []struct{ X, TextLength float64 }
}

// The issue asks for widths within a pixel of shields'. Render copies
// shields' measurements and arithmetic, so the layout should agree exactly;
// the tolerance only absorbs the printing of decimals.
const shieldsTolerance = 0.001

func TestRenderLaysOutAsShields(t *testing.T) {
	data, err := os.ReadFile("testdata/shields-widths.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []shieldsCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("%d reference badges, want the whole table", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Style+"/"+strconv.Quote(c.Label)+"/"+strconv.Quote(c.Message), func(t *testing.T) {
			p := parse(t, badge.Render(badge.Options{Label: c.Label, Value: c.Message, LabelColor: c.LabelColor, Style: c.Style}))
			if got := number(t, attr(p.root, "width")); math.Abs(got-c.Width) > shieldsTolerance {
				t.Errorf("width = %v, shields draws %v", got, c.Width)
			}
			// The texts themselves, without their shadows.
			var texts []map[string]string
			for _, a := range p.attrs {
				if a["aria-hidden"] != "true" {
					texts = append(texts, a)
				}
			}
			if len(texts) != len(c.Texts) {
				t.Fatalf("%d texts, shields draws %d", len(texts), len(c.Texts))
			}
			for i, want := range c.Texts {
				x, length := number(t, texts[i]["x"]), number(t, texts[i]["textLength"])
				if math.Abs(x-want.X) > shieldsTolerance || math.Abs(length-want.TextLength) > shieldsTolerance {
					t.Errorf("text %d at x %v, %v long; shields: x %v, %v long", i, x, length, want.X, want.TextLength)
				}
			}
		})
	}
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}
