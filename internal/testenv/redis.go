package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Redis is a private redis-server that a test may pause, kill and restart.
type Redis struct {
	Port  int
	cmd   *exec.Cmd
	extra []string // further redis-server arguments
	conf  string   // a configuration file, for servers that rewrite theirs (Sentinel)
}

// StartRedis starts a private Redis without persistence, stopped when the
// test ends.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	skipShort(tb)
	r := &Redis{Port: FreePort(tb)}
	r.Start(tb)
	tb.Cleanup(r.Kill)
	return r
}

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port) }

func (r *Redis) portString() string { return strconv.Itoa(r.Port) }

// Addr is host:port of the server.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Start starts the server (again), empty, on its port.
func (r *Redis) Start(tb testing.TB) {
	tb.Helper()
	bin, err := binary("redis-server")
	if err != nil {
		tb.Fatal(err)
	}
	var args []string
	if r.conf != "" {
		args = append(args, r.conf)
	}
	args = append(args, "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", tb.TempDir())
	r.cmd = exec.Command(bin, append(args, r.extra...)...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startServer(r.cmd); err != nil {
		tb.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", r.Addr(), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		tb.Fatal("redis-server did not start")
	}
}

// Kill ends the server at once.
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	waitFor(10*time.Second, func() bool { return r.cmd.Process.Signal(syscall.Signal(0)) != nil })
	r.cmd = nil
}

// Freeze stops the process (SIGSTOP): connections stay open, nothing answers.
func (r *Redis) Freeze() {
	r.cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(r.cmd.Process.Pid)
}

// Thaw resumes a frozen server.
func (r *Redis) Thaw() { r.cmd.Process.Signal(syscall.SIGCONT) }
