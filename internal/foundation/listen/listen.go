// Package listen opens the service's TCP listener, whose Close is the last
// step of a graceful stop. It knows nothing of HTTP.
//
// Closing a listening socket resets every connection still waiting in the
// kernel's accept queue, though each of those clients saw its connect
// succeed and may already have written a request. So Close first lets the
// server accept what is queued, then closes.
package listen

import (
	"net"
	"sync"
	"time"
)

// maxQueueWait bounds how long Close waits for the accept queue to empty:
// a server that stopped accepting would otherwise hold it forever.
const maxQueueWait = time.Second

// Listener is a TCP listener whose Close empties the accept queue first.
type Listener struct {
	*net.TCPListener
	once sync.Once
	err  error
}

// Listen listens on the TCP address addr ("tcp" rather than "tcp4": an
// address without a host, ":8080", takes IPv6 as well as IPv4).
func Listen(addr string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Listener{TCPListener: ln.(*net.TCPListener)}, nil
}

// Close waits until no connection is left in the accept queue (the server
// goes on accepting meanwhile), at most maxQueueWait, then closes the
// socket. A connection whose handshake completes between the last look at
// the queue and the close, a few microseconds, is still reset: that is why
// the service drains first (load balancers stop sending, see main.go).
// Close may be called more than once; later calls return the first's result.
func (l *Listener) Close() error {
	l.once.Do(func() {
		deadline := time.Now().Add(maxQueueWait)
		for queued(l.TCPListener) > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		l.err = l.TCPListener.Close()
	})
	return l.err
}
