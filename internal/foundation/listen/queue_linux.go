package listen

import (
	"net"

	"golang.org/x/sys/unix"
)

// queued is the length of l's accept queue: for a listening socket,
// Linux reports it in TCP_INFO's tcpi_unacked. 0 when it cannot be read.
func queued(l *net.TCPListener) int {
	rc, err := l.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = int(info.Unacked)
		}
	})
	return n
}
