package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBootstrapIsSharedUntilWhatMadeItChanges(t *testing.T) {
	skipShort(t)
	install, err := binary("mariadb-install-db", "mysql_install_db")
	if err != nil {
		t.Skip(err)
	}
	server, err := binary("mariadbd", "mysqld")
	if err != nil {
		t.Skip(err)
	}
	first, err := makeBootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(first, "data", "mysql")) {
		t.Fatalf("bootstrap %s holds no data/mysql", first)
	}
	// Another binary (a second call stands for it) finds the finished one.
	again, err := makeBootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("second bootstrap in %s, want the shared %s", again, first)
	}
	if want := filepath.Join(os.TempDir(), bootstrapPrefix+bootstrapKey(install, server, nil)); first != want {
		t.Errorf("bootstrap in %s, want %s", first, want)
	}

	tests := []struct {
		name       string
		args       []string
		install    string
		wantShared bool
	}{
		{"same programs and arguments", nil, install, true},
		{"other arguments", []string{"--user=root"}, install, false},
		{"another install program", nil, server, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := bootstrapKey(tt.install, server, tt.args) == bootstrapKey(install, server, nil)
			if shared != tt.wantShared {
				t.Errorf("shares the bootstrap: %v, want %v", shared, tt.wantShared)
			}
		})
	}
}
