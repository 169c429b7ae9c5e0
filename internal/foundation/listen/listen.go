// Package listen opens the service's TCP listener, whose Close is the last
// step of a graceful stop. It knows nothing of HTTP.
//
// Closing a listening socket resets every connection still waiting in the
// kernel's accept queue, though each of those clients saw its connect
// succeed and may already have written a request. So Close first has the
// kernel stop completing new connections (their clients are refused, as
// after the close), then lets the server accept what is queued, then
// closes.
package listen

import (
	"context"
	"net"
	"sync"
	"time"
)

// maxQueueWait bounds how long Close waits for the accept queue to empty:
// a server that stopped accepting would otherwise hold it forever.
const maxQueueWait = time.Second

// settle is how long the accept queue must stay empty, once new
// connections are refused, before Close closes: a handshake whose SYN-ACK
// left before the refusal completes when the client's ACK arrives, half a
// round trip later, and its connection must be accepted too. Far above a
// round trip within a data centre, and paid once per stop.
const settle = 50 * time.Millisecond

// Listener is a TCP listener whose Close empties the accept queue first.
type Listener struct {
	*net.TCPListener
	once sync.Once
	err  error
}

// Listen listens on the TCP address addr ("tcp" rather than "tcp4": an
// address without a host, ":8080", takes IPv6 as well as IPv4). The socket
// is plain TCP: Go listens with Multipath TCP where the system has it, and
// the kernel refuses a socket filter (see refuseNew) on such a socket.
// Clients behind a load balancer gain nothing from Multipath TCP.
func Listen(addr string) (*Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Listener{TCPListener: ln.(*net.TCPListener)}, nil
}

// Close has the kernel refuse new connections, waits until the accept
// queue has stayed empty for settle (the server goes on accepting
// meanwhile), at most maxQueueWait, then closes the socket. So every
// connection the kernel completed is accepted, and every client that
// connects during the stop is refused at connect: its SYN is dropped, and
// the one it sends again (a second later) meets the closed socket. Where
// the kernel cannot refuse them (another system), Close closes once the
// queue is empty: a connection completed between that look and the close
// is then still reset. Close may be called more than once; later calls
// return the first's result.
func (l *Listener) Close() error {
	l.once.Do(func() {
		wait := time.Duration(0)
		if refuseNew(l.TCPListener) == nil {
			wait = settle
		}
		deadline := time.Now().Add(maxQueueWait)
		var empty time.Time // since when the queue was seen empty
		for time.Now().Before(deadline) {
			if queued(l.TCPListener) > 0 {
				empty = time.Time{}
			} else if empty.IsZero() {
				empty = time.Now()
			}
			if !empty.IsZero() && time.Since(empty) >= wait {
				break
			}
			time.Sleep(time.Millisecond)
		}
		l.err = l.TCPListener.Close()
	})
	return l.err
}
