package visitors

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/x-way/crawlerdetect"
)

// The fast crawler test gives crawlerdetect's own answers: on the agents
// the library is tested with (its crawlers, and a sample of its devices),
// on agents whose exclusions meet or overlap, and on agents that are not
// ASCII (which it hands to the library). Each set of agents is a subtest
// of its own, in parallel: the comparisons are the library's regular
// expressions over every agent, 25 s of one core under the race detector
// in one row.
func TestTheCrawlerTestAgreesWithCrawlerdetect(t *testing.T) {
	if theCrawlerTest() == nil {
		t.Fatal("crawlerdetect's lists could not be read, or an exclusion has a form crawlerTest does not handle: every new agent would cost the library's full test")
	}
	// Under -short a tenth of the agents: the 2,300 of the full suite cost
	// 30 s of one core under the race detector, more than all the other
	// tests of scripts/test -short together.
	sparse := 1
	if testing.Short() {
		sparse = 10
	}
	browsers := make([]string, 0, 200/sparse)
	for i := range 200 / sparse {
		browsers = append(browsers, fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.%d Safari/537.36", i, i*7))
	}
	// What is left of an agent is what the library's own exclusion
	// expression leaves.
	_, exclusions, _ := crawlerdetectLists()
	exclude := regexp.MustCompile("(?i)(" + strings.Join(exclusions, "|") + ")")
	for _, set := range []struct {
		name   string
		agents []string
	}{
		{"agents whose exclusions meet, overlap or are not ASCII", []string{
			"", " ", "Mozilla/5.0", "  Mozilla/5.0 (compatible; Googlebot/2.1)  ",
			"SafSafari/1.0ari", "Safari/1.2.3Firefox/4Chrome", "Mozilla/5.0 (X11; Linux x86_64) like Gecko/2010 KHTML,Gecko",
			"CPU iPhone OS 17_5 like Mac OS X bot", "Opera Mini/12.34.567/89.Opera", "Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.86 Safari/537.36",
			"Ünïcode agent/1.0 bot", "Mozilla/5.0 (compatible; ſpider)", "K\u212aHTML crawler",
		}},
		{"a browser's builds", browsers},
		{"crawlerdetect's crawlers", libraryAgents(t, "crawlers.txt", 3*sparse)},
		{"crawlerdetect's devices", libraryAgents(t, "devices.txt", 200*sparse)},
	} {
		t.Run(set.name, func(t *testing.T) {
			t.Parallel()
			for _, a := range set.agents {
				got, ok := theCrawlerTest().rest(a)
				if want := exclude.ReplaceAllString(strings.TrimSpace(a), ""); ok && got != want {
					t.Errorf("rest(%q) = %q; the library's exclusions leave %q", a, got, want)
				}
			}
			b := NewBots()
			for _, a := range set.agents {
				if a == "" {
					continue // Is: no agent is a script's, whatever the library says
				}
				if got, want := b.Is(a), crawlerdetect.IsCrawler(a); got != want {
					t.Errorf("Is(%q) = %v; crawlerdetect says %v", a, got, want)
				}
			}
			t.Logf("%d agents", len(set.agents))
		})
	}
}

// libraryAgents reads every step-th line of crawlerdetect's test data
// file name, from the module's source.
func libraryAgents(t *testing.T, name string, step int) []string {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/x-way/crawlerdetect").Output()
	if err != nil {
		t.Fatalf("finding crawlerdetect's source: %v", err)
	}
	f, err := os.Open(filepath.Join(strings.TrimSpace(string(dir)), "testdata", name))
	if err != nil {
		t.Fatalf("crawlerdetect's test agents: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		if n%step == 0 {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		t.Fatalf("crawlerdetect's %s: %d agents, %v", name, len(out), err)
	}
	return out
}

// BenchmarkBots is the crawler test of agents never seen before, each a
// browser's with another build number, against crawlerdetect's own.
func BenchmarkBots(b *testing.B) {
	agent := func(i int) string {
		return fmt.Sprintf("Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.%d Mobile Safari/537.36", i, i/7)
	}
	b.Run("bots", func(b *testing.B) {
		bots := NewBots()
		for i := range b.N {
			bots.Is(agent(i))
		}
	})
	b.Run("rest", func(b *testing.B) {
		test := theCrawlerTest()
		for i := range b.N {
			test.rest(agent(i))
		}
	})
	b.Run("crawlerdetect", func(b *testing.B) {
		for i := range b.N {
			crawlerdetect.IsCrawler(agent(i))
		}
	})
}
