package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeAptGet puts an apt-get first on PATH that records each call in
// calls and answers install with installOutput and installExit.
func fakeAptGet(t *testing.T, installOutput string, installExit int) (path, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/bash\necho \"$*\" >>" + calls + "\n" +
		"[ \"$1\" = install ] || exit 0\ncat <<'OUT'\n" + installOutput + "\nOUT\nexit " + strconv.Itoa(installExit) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + ":" + os.Getenv("PATH"), calls
}

// The background install (start_packages, then wait_packages) that
// scripts/test runs beside the compile: apt-get's failure fails the
// script with apt-get's own message, success says what it installed, and
// anyone but root is told the one line to run without apt-get being
// called. "id" is a shell function standing for root or a user.
func TestBackgroundInstallFailsWithAptGetsMessage(t *testing.T) {
	tests := []struct {
		name        string
		uid         int
		exit        int
		wantOK      bool
		want        []string
		wantAptCall bool
	}{
		{"apt-get fails: the script fails with its message", 0, 1, false,
			[]string{"E: Unable to locate package nosuchpkg", "error: apt-get install nosuchpkg failed", "error: the packages were not installed"}, true},
		{"apt-get installs: the script goes on", 0, 0, true,
			[]string{"==> installing with apt-get: nosuchpkg", "==> installed nosuchpkg in "}, true},
		{"a user is told what to run as root", 1000, 0, false,
			[]string{"sudo apt-get install -y --no-install-recommends nosuchpkg"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := "Reading package lists..."
			if tc.exit != 0 {
				out = "E: Unable to locate package nosuchpkg"
			}
			path, calls := fakeAptGet(t, out, tc.exit)
			cmd := exec.Command("bash", "-c", `source ./lib.sh
id() { echo "$UID_WANTED"; }
start_packages nosuchcmd-of-the-test:nosuchpkg
wait_packages
echo "went on"`)
			cmd.Env = append(os.Environ(), "PATH="+path, "UID_WANTED="+strconv.Itoa(tc.uid), "TMPDIR="+t.TempDir())
			b, err := cmd.CombinedOutput()
			got := string(b)
			if ok := err == nil && strings.Contains(got, "went on"); ok != tc.wantOK {
				t.Fatalf("went on: %v, want %v (err %v); output:\n%s", ok, tc.wantOK, err, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			_, statErr := os.Stat(calls)
			if called := statErr == nil; called != tc.wantAptCall {
				t.Errorf("apt-get called: %v, want %v; output:\n%s", called, tc.wantAptCall, got)
			}
		})
	}
}
