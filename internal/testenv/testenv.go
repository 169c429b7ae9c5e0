// Package testenv gives tests real servers: a fresh database on the shared
// MariaDB that scripts/test starts, and private MariaDB or Redis servers for
// tests that stop, kill or pause them.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// EnvMySQLDSN names a server DSN (no database) for tests; scripts/test sets it.
const EnvMySQLDSN = "COUNTERS_TEST_MYSQL_DSN"

var (
	sharedOnce sync.Once
	sharedDSN  string
	sharedErr  error
)

// serverDSN returns the shared server's DSN, starting a private MariaDB for
// this test binary when none is configured.
func serverDSN() (string, error) {
	sharedOnce.Do(func() {
		defer patientDial()
		if dsn := os.Getenv(EnvMySQLDSN); dsn != "" {
			sharedDSN = dsn
			sharedErr = awaitServer(dsn, 2*time.Minute)
			return
		}
		dir, err := os.MkdirTemp("", "countersvc-testdb-")
		if err != nil {
			sharedErr = err
			return
		}
		m := &MariaDB{Dir: dir}
		if err := m.start(); err != nil {
			sharedErr = fmt.Errorf("no %s set and starting a private MariaDB failed: %w", EnvMySQLDSN, err)
			return
		}
		sharedDSN = m.ServerDSN()
	})
	return sharedDSN, sharedErr
}

// awaitServer waits until the server of dsn answers and its user may
// create databases (as NewDatabase does), for at most timeout:
// scripts/test starts its MariaDB (a bootstrap of seconds, over twenty
// on a loaded machine) while go test links the first test binaries, so
// the first tests may come before it, before its user is made ("Access
// denied"), or between the user's creation and its grant.
func awaitServer(dsn string, timeout time.Duration) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return fmt.Errorf("parsing %s: %v", EnvMySQLDSN, err)
	}
	defer db.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var grants int
		err = db.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'CREATE') +
			(SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES WHERE PRIVILEGE_TYPE = 'CREATE')`).Scan(&grants)
		cancel()
		if err == nil && grants == 0 {
			err = errors.New("its user may not create databases (yet)")
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the MariaDB of %s did not answer within %v: %v", EnvMySQLDSN, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// patientDial gives the shared server's DSN 10 s to open a connection
// where it sets no timeout: the service's 2 s (storage.Open) are for a
// server that answers at once, and the shared test server, busy with the
// parallel tests of every package on a loaded machine, was seen to take
// longer (a 503 "cannot be reached"). Tests that stop or pause a server
// start private ones, whose DSNs keep the default.
func patientDial() {
	if sharedErr != nil {
		return
	}
	cfg, err := mysql.ParseDSN(sharedDSN)
	if err != nil {
		sharedErr = fmt.Errorf("parsing %s: %v", EnvMySQLDSN, err)
		return
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
		sharedDSN = cfg.FormatDSN()
	}
}

// MySQLDSN returns the DSN of a new, empty database that is dropped when the
// test ends.
func MySQLDSN(tb testing.TB) string {
	tb.Helper()
	skipShort(tb)
	server, err := serverDSN()
	if err != nil {
		tb.Fatal(err)
	}
	return NewDatabase(tb, server)
}

// NewDatabase creates a uniquely named database on the server of serverDSN
// and returns a DSN for it.
func NewDatabase(tb testing.TB, serverDSN string) string {
	tb.Helper()
	skipShort(tb)
	cfg, err := mysql.ParseDSN(serverDSN)
	if err != nil {
		tb.Fatalf("parsing %s: %v", EnvMySQLDSN, err)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	name := "t_" + sanitize(tb.Name()) + "_" + randomHex(4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		tb.Fatalf("creating test database: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// skipShort skips a test that needs a server when go test runs with
// -short (scripts/test -short): what is left are the tests that need
// nothing but Go, which run in a minute.
func skipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs MariaDB or Redis, which -short leaves out")
	}
}

// startServer starts cmd, whose SysProcAttr.Pdeathsig ends it with the
// test binary, and reaps it when it exits. Pdeathsig fires when the
// thread that started the process ends, not the process: a goroutine
// that locks its thread and returns without unlocking ends that thread
// (the network namespaces' dial does), and a server started from it
// would be killed in the middle of the run, as the shared MariaDB once
// was ("connection refused" for every later test). The server is started
// from a thread of its own, locked until the server exits.
func startServer(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
	}()
	return <-started
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitUntil polls ok until it returns true, and fails the test when 15
// seconds pass first, naming what it waited for.
func WaitUntil(tb testing.TB, what string, ok func() bool) {
	tb.Helper()
	if !waitFor(15*time.Second, ok) {
		tb.Fatalf("timed out waiting for: %s", what)
	}
}

// waitFor polls ok until it returns true or the timeout passes.
func waitFor(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// waitStopped waits until the kernel reports the process stopped: SIGSTOP
// takes effect asynchronously, and a test that freezes a server must not
// have it answer one more request.
func waitStopped(pid int) {
	waitFor(5*time.Second, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		i := strings.LastIndexByte(string(b), ')')
		return i > 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
	})
}
