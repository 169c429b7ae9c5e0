package visitors_test

import (
	"testing"

	"github.com/countersvc/countersvc/visitors"
)

func TestBotsAreKnownCrawlersAndClientsWithoutAUserAgent(t *testing.T) {
	tests := []struct {
		agent string
		bot   bool
	}{
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", false},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:133.0) Gecko/20100101 Firefox/133.0", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", false},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", true},
		{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", true},
		{"curl/8.5.0", true},
		{"python-requests/2.32.3", true},
		{"", true},
	}
	b := visitors.NewBots()
	for range 2 { // the second round is answered from the cache
		for _, tc := range tests {
			if got := b.Is(tc.agent); got != tc.bot {
				t.Errorf("Is(%q) = %v, want %v", tc.agent, got, tc.bot)
			}
		}
	}
}
