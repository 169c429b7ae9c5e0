package testenv

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// scripts/test starts its MariaDB beside go test: the shared server's
// DSN is waited for until it answers (a server that comes a second
// late), and a server that never comes, or whose user may not create
// databases yet, fails within the bound, saying why.
func TestTheSharedServerIsAwaitedWithinABound(t *testing.T) {
	skipShort(t)
	late := &MariaDB{Dir: t.TempDir(), Port: FreePort(t)}
	t.Cleanup(late.Kill)
	started := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		started <- late.start()
	}()
	if err := awaitServer(late.ServerDSN(), 2*time.Minute); err != nil {
		t.Errorf("a server that came a second late: %v", err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}

	// A user the server knows but has not granted anything yet.
	db, err := sql.Open("mysql", late.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE USER 'ungranted'@'127.0.0.1' IDENTIFIED BY 'x'"); err != nil {
		t.Fatal(err)
	}
	ungranted := fmt.Sprintf("ungranted:x@tcp(127.0.0.1:%d)/", late.Port)
	if err := awaitServer(ungranted, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "create databases") {
		t.Errorf("a user without grants: %v, want an error saying it may not create databases", err)
	}

	never := &MariaDB{Port: FreePort(t)}
	start := time.Now()
	err = awaitServer(never.ServerDSN(), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), EnvMySQLDSN) {
		t.Errorf("a server that never came: %v, want an error naming %s", err, EnvMySQLDSN)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("a server that never came was waited for %v, want about 0.5 s", waited)
	}
}
