package testenv

import (
	"strings"
	"testing"
	"time"
)

// scripts/test starts its MariaDB beside go test: the shared server's
// DSN is waited for until it answers (a server that comes a second
// late), and a server that never comes fails within the bound, naming
// the variable.
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

	never := &MariaDB{Port: FreePort(t)}
	start := time.Now()
	err := awaitServer(never.ServerDSN(), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), EnvMySQLDSN) {
		t.Errorf("a server that never came: %v, want an error naming %s", err, EnvMySQLDSN)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("a server that never came was waited for %v, want about 0.5 s", waited)
	}
}
