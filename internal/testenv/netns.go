package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Remote is a client on another, non-loopback address of this machine: a
// network namespace of its own, joined to this one by a veth pair on a
// private /30. A service listening on HostAddr sees the Client's requests
// come from PeerAddr, as it would a client on another machine; nothing is
// faked in a header.
type Remote struct {
	HostAddr string // this namespace's end: listen here
	PeerAddr string // the client's address, as the service sees it
	Client   *http.Client
	ns       string
}

var remotes atomic.Int64

// NewRemote makes the namespace and its veth pair, removed when the test
// ends. It skips the test, saying why, where the machine forbids that (not
// root, no ip(8), no network namespaces).
func NewRemote(tb testing.TB) *Remote {
	tb.Helper()
	skipShort(tb)
	if os.Geteuid() != 0 {
		tb.Skip("a second, non-loopback address needs a network namespace, which needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("a second, non-loopback address needs ip(8) (iproute2) to make a network namespace")
	}
	n := remotes.Add(1)
	tag := fmt.Sprintf("ck%d%d", os.Getpid()%100000, n) // interface names are at most 15 bytes
	var b [2]byte
	rand.Read(b[:])
	net3, host4 := int(b[0]), int(b[1])&^3 // a random /30 of 10.251.0.0/16: parallel runs do not clash
	r := &Remote{
		HostAddr: fmt.Sprintf("10.251.%d.%d", net3, host4+1),
		PeerAddr: fmt.Sprintf("10.251.%d.%d", net3, host4+2),
		ns:       tag,
	}
	host, peer := tag+"h", tag+"p"
	steps := [][]string{
		{"netns", "add", r.ns},
		{"link", "add", host, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", r.ns},
		{"addr", "add", r.HostAddr + "/30", "dev", host},
		{"link", "set", host, "up"},
		{"-n", r.ns, "addr", "add", r.PeerAddr + "/30", "dev", peer},
		{"-n", r.ns, "link", "set", peer, "up"},
	}
	for i, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			if i > 0 {
				exec.Command("ip", "netns", "del", r.ns).Run()
			}
			tb.Skipf("this machine refuses a network namespace for a non-loopback client: ip %s: %v: %s",
				strings.Join(args, " "), err, out)
		}
	}
	// Deleting the namespace deletes its end of the pair, and so both.
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", r.ns).Run() })
	r.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: r.dial}}
	return r
}

// dial connects from inside the namespace. A socket belongs to the network
// namespace of the thread that made it, so a goroutine locked to a thread
// of its own moves that thread in and dials; it never unlocks, so the
// thread ends with it instead of serving other goroutines from the wrong
// namespace. The connection then works from any thread.
func (r *Remote) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + r.ns)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("entering network namespace %s: %w", r.ns, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		done <- result{c, err}
	}()
	res := <-done
	return res.c, res.err
}
