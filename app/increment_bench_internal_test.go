package app

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// stillService is a counters.Service whose increments cost nothing: the
// benchmark below measures the HTTP layer alone.
type stillService struct{ counters.Service }

func (stillService) Increment(context.Context, string, int64) (int64, error) { return 1, nil }
func (stillService) IncrementWith(context.Context, string, int64, counters.Extra) (int64, error) {
	return 1, nil
}

// BenchmarkIncrementServed is what the HTTP layer costs an increment as
// scripts/bench's hot counter sends it (wrk's POST without a body or a
// token, from this machine): through fasthttp's server over an in-memory
// connection from 127.0.0.1, to a service that does nothing. The request is written as
// bytes (fasthttp's client would decode its %2F); reading the answer is
// counted too.
func BenchmarkIncrementServed(b *testing.B) {
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Counters: stillService{},
		Keys: keys.New(nil, keys.Options{}), Capabilities: []Capability{PageHits(nil, nil, nil)}})
	ln := fasthttputil.NewInmemoryListener()
	go a.Listener(ln)
	defer a.Shutdown()
	conn, err := ln.DialWithLocalAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	request := []byte("POST /v1/counters/bench%2Fhot/increment HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
	r := bufio.NewReader(conn)
	var resp fasthttp.Response
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := conn.Write(request); err != nil {
			b.Fatal(err)
		}
		if err := resp.Read(r); err != nil || resp.StatusCode() != fiber.StatusOK {
			b.Fatalf("status %d, %v: %s", resp.StatusCode(), err, resp.Body())
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system, in
// ns: unlike ns/op, it does not grow when other processes take the cores.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
