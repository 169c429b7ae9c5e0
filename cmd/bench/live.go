package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The live scenario's figures (issue #21): what streams that watch a hot
// counter cost its increments, and what idle streams cost the process
// that holds them.
const (
	liveWatchers    = 1000
	liveIdleStreams = 10000
	liveHotPath     = "/v1/counters/bench%2Flive-hot"
	liveIdlePath    = "/v1/counters/bench%2Flive-idle"
)

type liveResult struct {
	without, with  load    // hot counter increments without and with liveWatchers streams on it
	events         float64 // events the watchers' streams sent over the measured runs
	idleRSS        int64   // resident memory with liveIdleStreams open
	baseRSS        int64   // ... before they opened
	idleGoroutines float64 // go_goroutines with them open
	baseGoroutines float64
	opened         time.Duration // opening them all took
}

func (b *bench) live() error {
	u := *b.urls["live"]
	if _, err := b.call("POST", u+liveHotPath+"/increment", 200); err != nil {
		return err
	}
	if _, err := b.call("POST", u+liveIdlePath+"/increment", 200); err != nil {
		return err
	}
	without := b.wrk("live hot counter, no stream", u+liveHotPath+"/increment", targetConns, postScript)
	watched := measure{"live hot counter, 1,000 streams", func(d time.Duration) (load, error) {
		ss, err := openStreams(u, liveHotPath+"/events", liveWatchers, true)
		defer ss.close()
		if err != nil {
			return load{}, err
		}
		return wrkRun(u+liveHotPath+"/increment", targetConns, d, postScript)
	}}
	if err := b.warm(without, watched); err != nil {
		return err
	}
	rs, events, err := b.compareCounting(u, []string{"counters_live_events_total"}, without, watched)
	if err != nil {
		return err
	}
	r := &liveResult{without: rs[0].byRPS(), with: rs[1].byRPS(), events: events[0]}

	// Idle streams: each reads its first event, then nothing; the
	// heartbeats wait in the sockets' buffers.
	if r.baseRSS, err = currentRSS(b.livePID); err != nil {
		return err
	}
	g, err := b.metrics(u, "go_goroutines")
	if err != nil {
		return err
	}
	r.baseGoroutines = g[0]
	start := time.Now()
	ss, err := openStreams(u, liveIdlePath+"/events", liveIdleStreams, false)
	defer ss.close()
	if err != nil {
		return err
	}
	r.opened = time.Since(start)
	time.Sleep(2 * time.Second) // let the process settle
	if r.idleRSS, err = currentRSS(b.livePID); err != nil {
		return err
	}
	if g, err = b.metrics(u, "go_goroutines"); err != nil {
		return err
	}
	r.idleGoroutines = g[0]
	b.r.live = r
	return nil
}

// streams are open event streams of the service, over raw connections:
// ten thousand of Go's HTTP clients would cost the benchmark more memory
// than the service.
type streams struct {
	conns []net.Conn
	wg    sync.WaitGroup
}

// openStreams opens n streams of path at base, each read up to its first
// event; drain keeps reading them (watchers), otherwise they stay idle.
func openStreams(base, path string, n int, drain bool) (*streams, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	ss := &streams{}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAccept: text/event-stream\r\n\r\n"
	for range n {
		c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
		if err != nil {
			return ss, err
		}
		ss.conns = append(ss.conns, c)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			return ss, err
		}
		rd := bufio.NewReaderSize(c, 512)
		status, err := rd.ReadString('\n')
		if err != nil || !strings.Contains(status, " 200 ") {
			return ss, fmt.Errorf("opening a stream: %q %v", status, err)
		}
		for { // up to the first event's end
			line, err := rd.ReadString('\n')
			if err != nil {
				return ss, err
			}
			if strings.HasPrefix(line, "data:") {
				break
			}
		}
		c.SetDeadline(time.Time{})
		if drain {
			ss.wg.Add(1)
			go func() { defer ss.wg.Done(); drainSlowly(c) }()
		}
	}
	return ss, nil
}

// drainSlowly reads everything a watcher's stream sends, once a second: a
// stream's clients run elsewhere, and a thousand readers woken by every
// event would make this machine's two cores pay the clients' share too.
// The socket's buffer holds a second of events.
func drainSlowly(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
		time.Sleep(time.Second)
	}
}

func (ss *streams) close() {
	if ss == nil {
		return
	}
	for _, c := range ss.conns {
		c.Close()
	}
	ss.wg.Wait()
}

// currentRSS is a process's resident memory now (VmRSS).
func currentRSS(pid int) (int64, error) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(s), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
