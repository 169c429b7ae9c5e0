package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"countersvc/internal/testenv"
)

// process is the real binary, started the way an operator would.
type process struct {
	cmd *exec.Cmd
	url string
	out *os.File
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "countersvc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

func startProcess(t *testing.T, bin, dsn string, env ...string) *process {
	t.Helper()
	port := testenv.FreePort(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "COUNTERS_ADDR=127.0.0.1:"+fmt.Sprint(port), "COUNTERS_MYSQL_DSN="+dsn,
		"COUNTERS_REDIS_URL=", "COUNTERS_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), out: out}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err := http.Get(p.url + "/readyz"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(out.Name())
			t.Fatalf("the service did not become ready: %s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two processes of the service on one database hammer one counter: every
// value is handed out exactly once. Then SIGTERM stops each cleanly.
func TestTwoProcessesOnOneDatabaseHandOutEachValueOnce(t *testing.T) {
	bin := buildBinary(t)
	dsn := testenv.MySQLDSN(t)
	procs := []*process{startProcess(t, bin, dsn), startProcess(t, bin, dsn)}

	const workers, each = 16, 300
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(p *process) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := client.Post(p.url+"/v1/counters/shared%2Fhot/increment", "application/json", nil)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(r.Body)
				r.Body.Close()
				var got struct{ Value int64 }
				if r.StatusCode != 200 || json.Unmarshal(body, &got) != nil {
					t.Errorf("%d %s", r.StatusCode, body)
					return
				}
				mu.Lock()
				if seen[got.Value] {
					t.Errorf("value %d handed out twice", got.Value)
				}
				seen[got.Value] = true
				mu.Unlock()
			}
		}(procs[w%2])
	}
	wg.Wait()
	for v := int64(1); v <= workers*each; v++ {
		if !seen[v] {
			t.Fatalf("value %d never handed out (%d values seen)", v, len(seen))
		}
	}

	// The increments were coalesced: the processes report statements that
	// carried several increments of the counter.
	r, err := client.Get(procs[0].url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(metrics), `counters_coalesce_statements_total{kind="counter"}`) {
		t.Errorf("no coalesced statements reported in /metrics")
	}

	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				log, _ := os.ReadFile(p.out.Name())
				t.Fatalf("exit after SIGTERM: %v: %s", err, log)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the service did not stop within 15 s of SIGTERM")
		}
	}
}

// Bad configuration stops the service at once with one line naming the
// variable, and a non-zero exit.
func TestBadConfigurationFailsAtStartWithOneLine(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "COUNTERS_MYSQL_TIMEOUT=soon")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("the service started with COUNTERS_MYSQL_TIMEOUT=soon")
	}
	text := strings.TrimSpace(string(out))
	if strings.Contains(text, "\n") || !strings.Contains(text, "COUNTERS_MYSQL_TIMEOUT") {
		t.Fatalf("output %q: want one line naming COUNTERS_MYSQL_TIMEOUT", out)
	}
}
