package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// load is one measured run of a load generator.
type load struct {
	RPS      float64
	P50, P99 time.Duration
	Requests int64
	Bad      int64 // failures: non-2xx answers and socket errors, or failed statements
}

// wrkRun drives url with wrk at conns connections for d. script is Lua that
// shapes the requests ("" = plain GET).
func wrkRun(url string, conns int, d time.Duration, script string) (load, error) {
	threads := 2
	if conns < threads {
		threads = conns
	}
	args := []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns), "-d", wrkDuration(d), "--latency", "--timeout", "10s"}
	if script != "" {
		f := filepath.Join(os.TempDir(), fmt.Sprintf("bench-%d.lua", time.Now().UnixNano()))
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			return load{}, err
		}
		defer os.Remove(f)
		args = append(args, "-s", f)
	}
	out, err := exec.Command("wrk", append(args, url)...).CombinedOutput()
	if err != nil {
		return load{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	return parseWrk(string(out))
}

// wrkDuration is d for wrk's -d, which takes whole seconds only ("1.5s" is
// refused, and -duration 3s makes a 1.5 s warm-up): rounded up, at least 1s.
func wrkDuration(d time.Duration) string {
	return fmt.Sprintf("%ds", max(1, int64((d+time.Second-1)/time.Second)))
}

var (
	reRPS      = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	reRequests = regexp.MustCompile(`(\d+) requests in`)
	reNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	reSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	reP50      = regexp.MustCompile(`\s50%\s+([\d.]+)(us|ms|s)`)
	reP99      = regexp.MustCompile(`\s99%\s+([\d.]+)(us|ms|s)`)
)

func parseWrk(out string) (load, error) {
	var l load
	m := reRPS.FindStringSubmatch(out)
	if m == nil {
		return l, fmt.Errorf("cannot parse wrk output: %s", out)
	}
	l.RPS, _ = strconv.ParseFloat(m[1], 64)
	if m := reRequests.FindStringSubmatch(out); m != nil {
		l.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		l.Bad += n
	}
	if m := reSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			l.Bad += n
		}
	}
	l.P50 = parseLatency(reP50.FindStringSubmatch(out))
	l.P99 = parseLatency(reP99.FindStringSubmatch(out))
	return l, nil
}

func parseLatency(m []string) time.Duration {
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[2]]
	return time.Duration(v * float64(unit))
}

// postScript makes wrk POST to the URL it was given.
const postScript = `wrk.method = "POST"`

// bearerScript makes wrk POST with "Authorization: <authorization>".
func bearerScript(authorization string) string {
	return postScript + fmt.Sprintf("\nwrk.headers[\"Authorization\"] = %q", authorization)
}

// seedScript gives each wrk thread a random sequence of its own. Seeds
// taken from the clock alone can coincide for threads that start
// together, and then both send the same "random" requests.
const seedScript = `local threads = 0
setup = function(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end
local function seed()
  math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6) + thread_id * 7919)
end
`

// uniformScript makes wrk send method to prefix + i + suffix for counters i
// spread evenly over 1..n (POST with "/increment": increments; GET with "":
// reads). The n requests are formatted once, in init, so that picking one
// costs the load generator (which shares the machine's cores with the
// service) about what a fixed request costs it.
func uniformScript(method, prefix, suffix string, n int) string {
	return seedScript + fmt.Sprintf(`local requests = {}
init = function(args)
  seed()
  for i = 1, %[2]d do
    requests[i] = wrk.format("%[3]s", "%[1]s" .. i .. "%[4]s")
  end
end
request = function()
  return requests[math.random(%[2]d)]
end`, strings.ReplaceAll(prefix, `"`, `\"`), n, method, strings.ReplaceAll(suffix, `"`, `\"`))
}

// visitorsScript makes every request come from another visitor: a random
// X-Forwarded-For among the 16 million addresses of 10.0.0.0/8, which a
// service that trusts 127.0.0.1 as its proxy takes for the client, with a
// browser's User-Agent and a Referer from small realistic sets (the
// browsers and systems of a site's traffic, a search engine, a social
// site, a news site, the site itself and none), so that each hit is a
// visitor and pays for it (wrk's own agent would be taken for a script),
// and a labelled hit pays for its labels as a real page's hits do. Each
// request is formatted anew, on both sides of any comparison.
var visitorsScript = hitsScript(false)

// newAgentsScript is visitorsScript with every hit a User-Agent never seen
// before (a browser's, with a random build number): what a hit costs when
// nothing about its agent is remembered.
var newAgentsScript = hitsScript(true)

// hitAgents are the User-Agents of visitorsScript: the browsers of most of
// a site's visitors, desktop and mobile, as they send them today.
var hitAgents = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
}

// hitReferers are the Referers of visitorsScript ("": none).
var hitReferers = []string{
	"https://www.google.com/",
	"https://news.example.com/item?id=1",
	"https://t.co/abc123",
	"https://example.org/blog/post",
	"",
}

// hitsScript is visitorsScript, or with fresh agents newAgentsScript. A
// fresh agent is a Chrome build number that no earlier hit sent.
func hitsScript(fresh bool) string {
	lua := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = strconv.Quote(s)
		}
		return "{" + strings.Join(q, ", ") + "}"
	}
	agent := "agents[math.random(#agents)]"
	if fresh {
		agent = `string.format("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.%d.%d Safari/537.36", thread_id * 100000 + n % 100000, math.random(0, 9999))`
	}
	return seedScript + fmt.Sprintf(`local agents = %s
local referers = %s
local n = 0
init = function(args)
  seed()
end
request = function()
  n = n + 1
  local ip = string.format("10.%%d.%%d.%%d", math.random(0, 255), math.random(0, 255), math.random(0, 255))
  local headers = {["X-Forwarded-For"] = ip, ["User-Agent"] = %s}
  local ref = referers[math.random(#referers)]
  if ref ~= "" then
    headers["Referer"] = ref
  end
  return wrk.format(nil, nil, headers)
end`, lua(hitAgents), lua(hitReferers), agent)
}
