//go:build !linux

package listen

import "net"

// queued cannot see the accept queue on this system: Close closes at once.
func queued(*net.TCPListener) int { return 0 }
