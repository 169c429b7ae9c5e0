package scripts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// npmTarball writes a release tarball shaped like npm's (package/bin/
// npm-cli.js and npx-cli.js, executable) whose commands print what they
// are, and returns its path and its integrity as the registry gives it.
func npmTarball(t *testing.T) (path, integrity string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/bin/npm-cli.js": "#!/bin/sh\necho fake npm \"$@\"\n",
		"package/bin/npx-cli.js": "#!/bin/sh\necho fake npx \"$@\"\n",
		"package/package.json":   `{"name": "npm"}`,
	} {
		mode := int64(0o644)
		if strings.HasSuffix(name, ".js") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	path = filepath.Join(t.TempDir(), "npm.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(buf.Bytes())
	return path, "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// fakeCurl puts a curl first on PATH that records its URL (the last
// argument) in calls and writes tarball where -o says, or fails as curl
// -f does on an HTTP error when tarball is "".
func fakeCurl(t *testing.T, tarball string) (path, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/bash\nout=\nwhile [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n" +
		"echo \"$1\" >>" + calls + "\n"
	if tarball == "" {
		script += "echo 'curl: (22) The requested URL returned error: 404' >&2; exit 22\n"
	} else {
		script += "cp " + tarball + " \"$out\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "curl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + ":" + os.Getenv("PATH"), calls
}

// fetch_npm unpacks npm's release only when it is the one pinned: a
// tarball whose sha512 differs from the pinned integrity, or a failed
// download, fails the script and leaves nothing behind, so that a later
// run fetches it again rather than trusting half a directory.
func TestNpmIsUnpackedOnlyWhenItsChecksumIsThePinnedOne(t *testing.T) {
	tarball, integrity := npmTarball(t)
	wrong := "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	tests := []struct {
		name      string
		tarball   string // "" : the download fails
		integrity string
		wantOK    bool
		want      string
	}{
		{"the pinned release is unpacked", tarball, integrity, true, "npm 1.2.3 from the npm registry"},
		{"another tarball is refused", tarball, wrong, false, "is not the release pinned in scripts/lib.sh"},
		{"a pin that is no sha512 refuses every tarball", tarball, "sha1-" + strings.TrimPrefix(integrity, "sha512-"), false, "is not the release pinned"},
		{"a failed download fails", "", integrity, false, "could not download npm 1.2.3 from https://registry.npmjs.org/npm/-/npm-1.2.3.tgz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, calls := fakeCurl(t, tc.tarball)
			parent := t.TempDir()
			dir := filepath.Join(parent, "1.2.3")
			cmd := exec.Command("bash", "-c", `source ./lib.sh && fetch_npm 1.2.3 "$INTEGRITY" "$DIR" && echo fetched`)
			cmd.Env = append(os.Environ(), "PATH="+path, "INTEGRITY="+tc.integrity, "DIR="+dir, "NPM_REGISTRY=")
			out, err := cmd.CombinedOutput()
			got := string(out)
			if ok := err == nil && strings.Contains(got, "fetched"); ok != tc.wantOK {
				t.Fatalf("fetched: %v, want %v (err %v); output:\n%s", ok, tc.wantOK, err, got)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, got)
			}
			if b, _ := os.ReadFile(calls); strings.TrimSpace(string(b)) != "https://registry.npmjs.org/npm/-/npm-1.2.3.tgz" {
				t.Errorf("curl fetched %q, want npm's release tarball from the registry", b)
			}
			left, _ := os.ReadDir(parent)
			if !tc.wantOK {
				if len(left) != 0 {
					t.Errorf("a failed fetch left %v in %s", left, parent)
				}
				return
			}
			if len(left) != 1 {
				t.Errorf("left %v in %s, want only 1.2.3", left, parent)
			}
			if fi, err := os.Stat(dir); err != nil {
				t.Error(err)
			} else if fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: %v, want 0755, so that other users may run it", dir, fi.Mode())
			}
			for cmd, want := range map[string]string{"npm": "fake npm --version", "npx": "fake npx --version"} {
				b, err := exec.Command(filepath.Join(dir, "bin", cmd), "--version").CombinedOutput()
				if err != nil || strings.TrimSpace(string(b)) != want {
					t.Errorf("%s --version: %q, %v; want %q", cmd, b, err, want)
				}
			}
			// Once there, it is not fetched again.
			os.Remove(calls)
			again := exec.Command("bash", "-c", `source ./lib.sh && fetch_npm 1.2.3 "$INTEGRITY" "$DIR"`)
			again.Env = cmd.Env
			if out, err := again.CombinedOutput(); err != nil {
				t.Fatalf("second fetch_npm: %v\n%s", err, out)
			}
			if _, err := os.Stat(calls); err == nil {
				t.Error("fetch_npm downloaded npm again although it was unpacked")
			}
		})
	}
}
