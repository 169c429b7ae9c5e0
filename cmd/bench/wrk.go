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
// browser's User-Agent, so that each hit is a visitor and pays for it
// (wrk's own would be taken for a script), and a Referer, so that a
// labelled hit pays for its referrer too. Each request is formatted
// anew, on both sides of any comparison.
const visitorsScript = seedScript + `init = function(args)
  seed()
end
request = function()
  local ip = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(0, 255))
  return wrk.format(nil, nil, {["X-Forwarded-For"] = ip, ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", ["Referer"] = "https://news.example.com/item?id=1"})
end`
