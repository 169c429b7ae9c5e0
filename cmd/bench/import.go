package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// importLines is how many lines each import of the import scenario sends.
const importLines = 1_000_000

// importResult is what the import scenario measured: each import's rate,
// and the import instance's peak resident memory over all of them.
type importResult struct {
	runs    []importRun
	peakRSS int64
}

type importRun struct {
	what    string
	lines   int64
	elapsed time.Duration
}

func (r importRun) rate() float64 { return float64(r.lines) / r.elapsed.Seconds() }

// imports sends a million generated lines to a fresh instance of the
// service (its own process, so that its high-water mark of memory is the
// imports'), streamed and gzipped as they are made: once mode=create into
// new counters (a transaction per chunk), once mode=overwrite&atomic=true
// over the same counters (one transaction).
func (b *bench) imports() error {
	url := *b.urls["import"]
	res := &importResult{}
	run := fmt.Sprintf("bench/import/%d/", time.Now().UnixNano())
	for _, q := range []struct{ what, query string }{
		{"create, a transaction per 1,000 lines", "mode=create"},
		{"overwrite, atomic (one transaction)", "mode=overwrite&atomic=true"},
	} {
		start := time.Now()
		read, err := b.importOnce(url+"/v1/import?"+q.query, run)
		if err != nil {
			return fmt.Errorf("%s: %w", q.what, err)
		}
		res.runs = append(res.runs, importRun{what: q.what, lines: read, elapsed: time.Since(start)})
		logf("import %s: %d lines in %s", q.what, read, time.Since(start).Round(time.Millisecond))
	}
	rss, err := peakRSS(b.importPID)
	if err != nil {
		return err
	}
	res.peakRSS = rss
	b.r.imports = res
	return nil
}

// importOnce streams the lines and returns how many the report read.
func (b *bench) importOnce(url, prefix string) (int64, error) {
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		w := bufio.NewWriter(zw)
		for i := range importLines {
			fmt.Fprintf(w, `{"name":"%s%07d","value":%d,"created_at":"2024-05-01T10:00:00Z"}`+"\n", prefix, i, i)
		}
		err := w.Flush()
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, pr)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Content-Type", "application/x-ndjson")
	client := &http.Client{} // no timeout of its own: the context bounds it
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	var rep struct{ Read, Refused int64 }
	if err := json.Unmarshal(body, &rep); err != nil {
		return 0, err
	}
	if rep.Read != importLines || rep.Refused != 0 {
		return 0, fmt.Errorf("the report read %d lines and refused %d: %s", rep.Read, rep.Refused, body)
	}
	return rep.Read, nil
}

// peakRSS is a process's high-water mark of resident memory (VmHWM).
func peakRSS(pid int) (int64, error) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(s), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}
