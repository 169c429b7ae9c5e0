//go:build !linux

package listen

import (
	"errors"
	"net"
)

// queued cannot see the accept queue on this system: Close closes at once.
func queued(*net.TCPListener) int { return 0 }

// refuseNew cannot stop this system's kernel from accepting.
func refuseNew(*net.TCPListener) error { return errors.ErrUnsupported }
