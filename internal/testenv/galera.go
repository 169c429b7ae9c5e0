package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvCluster turns on the tests that start clusters of servers (Galera,
// Redis Sentinel): they take minutes and several servers' memory, so the
// default run leaves them out and `scripts/test --cluster` sets it.
const EnvCluster = "COUNTERS_TEST_CLUSTER"

// NeedCluster skips the test unless EnvCluster is set.
func NeedCluster(tb testing.TB) {
	tb.Helper()
	if os.Getenv(EnvCluster) == "" {
		tb.Skipf("a cluster test: run it with scripts/test --cluster (or %s=1)", EnvCluster)
	}
}

// galeraProvider is where Debian's galera-4 package puts the library.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// Galera is a private MariaDB Galera cluster of three nodes on 127.0.0.1,
// each with its own ports and data directory, every node a writer.
type Galera struct {
	Nodes    []*GaleraNode
	dir      string
	uid, gid uint32 // of the mysql user, whom the nodes run as
}

// GaleraNode is one node of a Galera cluster.
type GaleraNode struct {
	Port int // the MySQL port
	// gcomm (group communication), IST (incremental state transfer) and
	// SST (full state transfer, by rsync) ports.
	gcomm, ist, sst int
	dir             string
	cmd             *exec.Cmd
}

// DSN is a DSN for the database name on this node.
func (n *GaleraNode) DSN(name string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", n.Port, name)
}

// StartGalera starts a three-node Galera cluster from Debian's packages
// (mariadb-server and galera-4; scripts/test --cluster installs them) and
// waits until every node is synced in a cluster of three. The first node
// bootstraps the cluster; the others join it one at a time and copy its
// data by rsync, which needs them to run as the mysql user, so they do,
// with data directories that user owns. Everything is stopped and removed
// when the test ends.
func StartGalera(tb testing.TB) *Galera {
	tb.Helper()
	if !fileExists(galeraProvider) {
		tb.Fatalf("%s missing: install galera-4 (scripts/test --cluster does)", galeraProvider)
	}
	uid, gid, err := mysqlUser()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "countersvc-galera-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	g := &Galera{dir: dir, uid: uid, gid: gid}
	for i := range 3 {
		n := &GaleraNode{Port: FreePort(tb), gcomm: FreePort(tb), ist: FreePort(tb), sst: FreePort(tb),
			dir: filepath.Join(dir, "node"+strconv.Itoa(i+1))}
		if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := chownTree(n.dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
		g.Nodes = append(g.Nodes, n)
	}
	tb.Cleanup(g.Kill)

	first := g.Nodes[0]
	if err := first.install(uid, gid); err != nil {
		tb.Fatal(err)
	}
	for i, n := range g.Nodes {
		if err := n.start(g, i == 0, uid, gid); err != nil {
			tb.Fatal(err)
		}
		if err := n.waitSynced(i + 1); err != nil {
			tb.Fatal(err)
		}
	}
	return g
}

func mysqlUser() (uid, gid uint32, err error) {
	u, err := user.Lookup("mysql")
	if err != nil {
		return 0, 0, fmt.Errorf("the mysql user (mariadb-server creates it): %w", err)
	}
	id, _ := strconv.ParseUint(u.Uid, 10, 32)
	group, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(id), uint32(group), nil
}

func chownTree(root string, uid, gid uint32) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(gid))
	})
}

// asUser runs cmd as uid:gid and kills it with the test binary. The
// credentials are set before the parent-death signal, so it survives them
// (mariadbd's own --user would switch later and clear it).
func asUser(cmd *exec.Cmd, uid, gid uint32) {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	}
	cmd.SysProcAttr = attr
	// The SST scripts (wsrep_sst_rsync) are found on the PATH.
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

func (n *GaleraNode) install(uid, gid uint32) error {
	install, err := binary("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return err
	}
	var out []byte
	for attempt := 0; attempt < 3; attempt++ {
		// --force: as in StartMariaDB, for machines without /etc/hosts.
		cmd := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(n.dir, "data"), "--force",
			"--auth-root-authentication-method=normal", "--skip-test-db")
		asUser(cmd, uid, gid)
		if out, err = cmd.CombinedOutput(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("mariadb-install-db: %v: %s", err, out)
}

func (n *GaleraNode) start(g *Galera, bootstrap bool, uid, gid uint32, extra ...string) error {
	bin, err := binary("mariadbd", "mysqld")
	if err != nil {
		return err
	}
	args := append(n.args(g), extra...)
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	n.cmd = exec.Command(bin, args...)
	asUser(n.cmd, uid, gid)
	// From a thread kept for it, as every private server: its Pdeathsig
	// fires when the starting thread ends (startServer says why).
	return startServer(n.cmd)
}

// args are the node's mariadbd options.
func (n *GaleraNode) args(g *Galera) []string {
	var members []string
	for _, m := range g.Nodes {
		members = append(members, "127.0.0.1:"+strconv.Itoa(m.gcomm))
	}
	return []string{"--no-defaults", "--datadir=" + filepath.Join(n.dir, "data"),
		"--socket=" + filepath.Join(n.dir, "mysql.sock"), "--port=" + strconv.Itoa(n.Port),
		"--bind-address=127.0.0.1", "--skip-name-resolve", "--max-connections=300",
		"--log-error=" + filepath.Join(n.dir, "error.log"), "--pid-file=" + filepath.Join(n.dir, "mysqld.pid"),
		"--innodb-buffer-pool-size=64M", "--performance-schema=OFF",
		// What Galera requires: row-based replication, interleaved
		// auto-increment locks, InnoDB.
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--default-storage-engine=InnoDB",
		"--wsrep-on=ON", "--wsrep-provider=" + galeraProvider,
		"--wsrep-cluster-name=countersvc-test",
		"--wsrep-cluster-address=gcomm://" + strings.Join(members, ","),
		"--wsrep-node-address=127.0.0.1:" + strconv.Itoa(n.gcomm),
		"--wsrep-node-name=" + filepath.Base(n.dir),
		"--wsrep-provider-options=base_port=" + strconv.Itoa(n.gcomm) +
			";ist.recv_addr=127.0.0.1:" + strconv.Itoa(n.ist) + ";gcache.size=64M",
		"--wsrep-sst-method=rsync",
		"--wsrep-sst-receive-address=127.0.0.1:" + strconv.Itoa(n.sst),
		"--wsrep-slave-threads=2",
	}
}

// recoveredPosition runs mariadbd --wsrep-recover, as the service
// manager's galera_recovery does before it starts a node that crashed: a
// kill leaves the node's grastate.dat without its position (seqno -1),
// and a node that does not know it asks for a full state transfer (SST)
// instead of the writes it missed (IST). The position is in InnoDB.
func (n *GaleraNode) recoveredPosition(g *Galera) (string, error) {
	bin, err := binary("mariadbd", "mysqld")
	if err != nil {
		return "", err
	}
	log := filepath.Join(n.dir, "recover.log")
	cmd := exec.Command(bin, append(n.args(g), "--wsrep-recover", "--log-error="+log)...)
	asUser(cmd, g.uid, g.gid)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mariadbd --wsrep-recover: %v: %s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return "", err
	}
	const mark = "WSREP: Recovered position: "
	s := string(b)
	i := strings.LastIndex(s, mark)
	if i < 0 {
		return "", fmt.Errorf("mariadbd --wsrep-recover recovered no position:\n%s", tail(b, 4000))
	}
	pos, _, _ := strings.Cut(s[i+len(mark):], "\n")
	return strings.TrimSpace(pos), nil
}

// waitSynced waits until the node answers, is synced and sees a cluster of
// at least size nodes. Joining copies the whole data directory, which takes
// seconds on a busy machine: the wait is generous.
func (n *GaleraNode) waitSynced(size int) error {
	db, err := sql.Open("mysql", n.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	var state string
	var members int
	if waitFor(3*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var name string
		if db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state) != nil {
			return false
		}
		if db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &members) != nil {
			return false
		}
		return state == "Synced" && members >= size
	}) {
		return nil
	}
	log, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return fmt.Errorf("galera node %s: state %q in a cluster of %d after 3 minutes:\n%s", n.dir, state, members, tail(log, 4000))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Kill ends every node at once.
func (g *Galera) Kill() {
	for _, n := range g.Nodes {
		n.Kill()
	}
}

// Kill ends the node at once, as a crash would. The others notice within
// seconds; a node left alone with less than half of the cluster leaves the
// primary component and refuses statements.
func (n *GaleraNode) Kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	n.cmd.Process.Kill()
	waitFor(30*time.Second, func() bool { return n.cmd.Process.Signal(syscall.Signal(0)) != nil })
	n.cmd = nil
}

// Stop freezes the node's mariadbd (SIGSTOP): it answers nothing, neither
// its clients nor the cluster, whose other nodes evict it once Galera's
// inactivity timeout (evs.inactive_timeout, 15 s by default) has passed.
func (n *GaleraNode) Stop() { n.signal(syscall.SIGSTOP) }

// Continue thaws a node that Stop froze (SIGCONT). An evicted node finds
// itself outside the primary component, rejoins and catches up by itself.
func (n *GaleraNode) Continue() { n.signal(syscall.SIGCONT) }

func (n *GaleraNode) signal(sig syscall.Signal) {
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(sig)
	}
}

// Restart starts node i again after Kill, with its data directory as the
// kill left it and the position recovered from it (recoveredPosition): it
// rejoins the cluster and copies the writes it missed from another node's
// cache (IST). It does not wait: see WaitSynced.
func (g *Galera) Restart(i int) error {
	n := g.Nodes[i]
	pos, err := n.recoveredPosition(g)
	if err != nil {
		return err
	}
	return n.start(g, false, g.uid, g.gid, "--wsrep-start-position="+pos)
}

// WaitSynced fails the test unless the node is synced in a cluster of at
// least size nodes within three minutes.
func (n *GaleraNode) WaitSynced(tb testing.TB, size int) {
	tb.Helper()
	if err := n.waitSynced(size); err != nil {
		tb.Fatal(err)
	}
}

// ErrorLog is the node's error log, for a test's report.
func (n *GaleraNode) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return string(b)
}
