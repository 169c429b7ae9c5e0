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

// refuseSYN is a classic BPF socket filter that drops a TCP segment with
// SYN set and ACK clear, a client's first packet, and lets every other
// through. On a listening socket the kernel runs it before it answers a
// SYN, so no new handshake starts, while those under way complete (their
// last packet, the client's ACK, passes) and land in the accept queue.
// The filter sees the segment from its TCP header: byte 13 holds the flags.
var refuseSYN = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 13},
	{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x10, Jt: 1}, // ACK: keep
	{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x02, Jt: 1}, // SYN: drop
	{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
}

// refuseNew stops l's kernel from starting new connections: their clients
// send their SYN again after a second, to a socket closed by then, and are
// refused.
func refuseNew(l *net.TCPListener) error {
	rc, err := l.SyscallConn()
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(refuseSYN)), Filter: &refuseSYN[0]}
	if cerr := rc.Control(func(fd uintptr) {
		err = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
	}); cerr != nil {
		return cerr
	}
	return err
}
