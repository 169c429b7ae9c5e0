package testenv

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// MariaDB is a private server that a test may stop and start again on the
// same port and data directory.
type MariaDB struct {
	Dir  string
	Port int
	cmd  *exec.Cmd
}

// StartMariaDB starts a private MariaDB, stopped when the test ends.
func StartMariaDB(tb testing.TB) *MariaDB {
	tb.Helper()
	skipShort(tb)
	m := &MariaDB{Dir: tb.TempDir()}
	if err := m.start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Kill)
	return m
}

// ServerDSN is a DSN for the server without a database.
func (m *MariaDB) ServerDSN() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.Port)
}

// DSN is a DSN for the database name on this server.
func (m *MariaDB) DSN(name string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.Port, name)
}

func binary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		if p := filepath.Join("/usr/sbin", n); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %v installed (scripts/test installs them)", names)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (m *MariaDB) start() error {
	if m.Port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		m.Port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	data := filepath.Join(m.Dir, "data")
	userArgs := []string{}
	if os.Geteuid() == 0 {
		userArgs = append(userArgs, "--user=root")
	}
	if !fileExists(filepath.Join(data, "mysql")) {
		if err := bootstrapped.copyTo(data, userArgs); err != nil {
			return err
		}
	}
	bin, err := binary("mariadbd", "mysqld")
	if err != nil {
		return err
	}
	args := append([]string{"--no-defaults", "--datadir=" + data,
		"--socket=" + filepath.Join(m.Dir, "mysql.sock"), "--port=" + strconv.Itoa(m.Port),
		"--bind-address=127.0.0.1", "--skip-name-resolve", "--max-connections=300",
		"--log-error=" + filepath.Join(m.Dir, "error.log"), "--pid-file=" + filepath.Join(m.Dir, "mysqld.pid"),
		// Its temporary tables in its own directory, not /tmp, which every
		// other server shares: a migration on a private server once failed
		// with "Error on delete of '/tmp/#sql-temptable-...' (Errcode: 2)"
		// while several ran at once.
		"--tmpdir=" + m.Dir}, userArgs...)
	m.cmd = exec.Command(bin, args...)
	// The server dies with the test binary even if cleanup never runs.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startServer(m.cmd); err != nil {
		return err
	}
	db, err := sql.Open("mysql", m.ServerDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if !waitFor(60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx) == nil
	}) {
		log, _ := os.ReadFile(filepath.Join(m.Dir, "error.log"))
		return fmt.Errorf("MariaDB did not start: %s", log)
	}
	return nil
}

// Start starts the server again after Stop or Kill, on the same port.
func (m *MariaDB) Start(tb testing.TB) {
	tb.Helper()
	if err := m.start(); err != nil {
		tb.Fatal(err)
	}
}

// Kill ends the server at once, as a crash would.
func (m *MariaDB) Kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Kill()
	m.waitGone()
}

// Stop shuts the server down cleanly.
func (m *MariaDB) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.waitGone()
}

func (m *MariaDB) waitGone() {
	waitFor(60*time.Second, func() bool {
		return m.cmd.Process.Signal(syscall.Signal(0)) != nil
	})
	m.cmd = nil
}

// Freeze stops the server process (SIGSTOP): connections stay open and
// nothing answers, as with a hung host or a network partition.
func (m *MariaDB) Freeze() {
	m.cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(m.cmd.Process.Pid)
}

// Thaw resumes a frozen server.
func (m *MariaDB) Thaw() { m.cmd.Process.Signal(syscall.SIGCONT) }

// bootstrapped is a data directory that mariadb-install-db made, which
// every private server's starts as a copy of: the bootstrap takes from
// three seconds on an idle 2-core machine to over twenty on a loaded one,
// the copy (114 MB, most of it the empty redo log) one or two, and the app
// package alone starts five private servers. It is made once for all the
// test binaries of a run and the runs after it (four of the suite's
// binaries start private servers, two at a time), in a directory whose
// name says what made it: the user, the arguments and the MariaDB
// programs' identity, so that an upgraded MariaDB or another user gets a
// bootstrap of its own.
var bootstrapped bootstrap

type bootstrap struct {
	once sync.Once
	dir  string // holds data, the bootstrapped data directory
	err  error
}

// bootstrapPrefix begins the name of every bootstrap's directory. A
// bootstrap under construction is named with the test binary's pid after
// bootstrapPrefix+"tmp-", and the next binary removes those of binaries
// that have ended (a test binary has no hook at its end); a finished one
// is renamed, at once and whole, to bootstrapPrefix and its key.
const bootstrapPrefix = "countersvc-mariadb-bootstrap-"

// copyTo makes data a fresh data directory, as mariadb-install-db would.
func (b *bootstrap) copyTo(data string, userArgs []string) error {
	b.once.Do(func() { b.dir, b.err = makeBootstrap(userArgs) })
	if b.err != nil {
		return b.err
	}
	os.RemoveAll(data)
	// --sparse=always: the redo log is zeros, a hole the copy keeps.
	if out, err := exec.Command("cp", "-a", "--sparse=always", filepath.Join(b.dir, "data"), data).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the bootstrapped data directory: %v: %s", err, out)
	}
	return nil
}

// bootstrapKey names what a bootstrap depends on: the user it was made as
// (another user could not read its files), the arguments, and the install
// program and server as they are on disk (an upgrade changes their size
// or modification time).
func bootstrapKey(install, server string, userArgs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "uid %d\nargs %q\n", os.Geteuid(), userArgs)
	for _, p := range []string{install, server} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func makeBootstrap(userArgs []string) (string, error) {
	install, err := binary("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return "", err
	}
	server, err := binary("mariadbd", "mysqld")
	if err != nil {
		return "", err
	}
	shared := filepath.Join(os.TempDir(), bootstrapPrefix+bootstrapKey(install, server, userArgs))
	if fileExists(filepath.Join(shared, "data", "mysql")) {
		return shared, nil
	}
	sweepBootstraps()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%stmp-%d-", bootstrapPrefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	// The bootstrap writes raw; data is its sparse copy, which holds the
	// 100 MB of the empty redo log as a hole: what stays on disk while
	// the binary runs (and until the next one sweeps it) is a tenth.
	raw, data := filepath.Join(dir, "raw"), filepath.Join(dir, "data")
	// --force: without it the bootstrap refuses a machine whose host
	// name and "localhost" do not resolve (a debootstrapped Debian has
	// no /etc/hosts); the server skips name resolution anyway.
	args := append([]string{"--no-defaults", "--datadir=" + raw, "--force",
		"--auth-root-authentication-method=normal", "--skip-test-db"}, userArgs...)
	// The bootstrap has been seen to fail now and then on a busy
	// machine; a fresh data directory and another go settle it.
	var out []byte
	for attempt := 0; attempt < 3; attempt++ {
		os.RemoveAll(raw)
		if out, err = exec.Command(install, args...).CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("mariadb-install-db: %v: %s", err, out)
	}
	out, err = exec.Command("cp", "-a", "--sparse=always", raw, data).CombinedOutput()
	os.RemoveAll(raw)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("copying the bootstrapped data directory: %v: %s", err, out)
	}
	// Another binary may have finished the same bootstrap first: then
	// the rename fails, and its copy serves as well as this one.
	if err := os.Rename(dir, shared); err != nil {
		if fileExists(filepath.Join(shared, "data", "mysql")) {
			os.RemoveAll(dir)
			return shared, nil
		}
		return dir, nil // this binary's own, swept after it ends
	}
	return shared, nil
}

// sweepBootstraps removes the bootstrap directories that test binaries
// left unfinished or unshared when they ended. Best effort: what it cannot
// remove stays.
func sweepBootstraps() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), bootstrapPrefix+"*"))
	for _, d := range dirs {
		// A shared bootstrap's key has no "-"; a binary's own has its
		// pid and one (older versions named theirs without "tmp-").
		pid, _, owned := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(filepath.Base(d), bootstrapPrefix), "tmp-"), "-")
		if !owned {
			continue
		}
		if n, err := strconv.Atoi(pid); err == nil && !fileExists(fmt.Sprintf("/proc/%d", n)) {
			os.RemoveAll(d)
		}
	}
}
