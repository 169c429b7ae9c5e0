// Package scripts_test tests the shell helpers of scripts/lib.sh by running
// them in bash, as the scripts do.
package scripts_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// aptInstall is what apt-get install prints when the packages asked for
// pull in new dependencies and upgrade installed ones.
func aptInstall(upgraded, installed int) string {
	var b strings.Builder
	b.WriteString("Reading package lists...\nBuilding dependency tree...\n")
	fmt.Fprintf(&b, "%d upgraded, %d newly installed, 0 to remove and 120 not upgraded.\n", upgraded, installed)
	b.WriteString("Need to get 71.2 MB of archives.\n")
	for i := 1; i <= upgraded+installed; i++ {
		fmt.Fprintf(&b, "Get:%d http://deb.debian.org/debian bookworm/main amd64 pkg%d amd64 1.0 [10.0 kB]\n", i, i)
	}
	for i := 1; i <= upgraded+installed; i++ {
		fmt.Fprintf(&b, "Setting up pkg%d (1.0) ...\n", i)
	}
	return b.String()
}

var progressLine = regexp.MustCompile(`==>   ([0-9]+) of ([0-9]+) packages downloaded`)

// The installer's progress counts the packages apt fetches against all
// that apt said it would fetch, upgraded dependencies included, so that it
// never reports more downloaded than there are ("51 of 47").
func TestAptProgressNeverCountsPastTheTotal(t *testing.T) {
	for _, c := range []struct{ upgraded, installed int }{{4, 47}, {0, 3}} {
		t.Run(fmt.Sprintf("%d upgraded, %d new", c.upgraded, c.installed), func(t *testing.T) {
			cmd := exec.Command("bash", "-c", `source ./lib.sh && apt_progress "$(mktemp)"`)
			cmd.Env = append(cmd.Environ(), "APT_PROGRESS_EVERY=0") // a line for every change
			cmd.Stdin = strings.NewReader(aptInstall(c.upgraded, c.installed))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			lines := progressLine.FindAllStringSubmatch(string(out), -1)
			if len(lines) == 0 {
				t.Fatalf("no progress line in:\n%s", out)
			}
			total := c.upgraded + c.installed
			for _, m := range lines {
				got, _ := strconv.Atoi(m[1])
				of, _ := strconv.Atoi(m[2])
				if of != total || got > of {
					t.Fatalf("%q: want at most %d of %d", m[0], total, total)
				}
			}
			if last := lines[len(lines)-1]; last[1] != strconv.Itoa(total) {
				t.Errorf("last progress %q, want all %d downloaded", last[0], total)
			}
		})
	}
}
