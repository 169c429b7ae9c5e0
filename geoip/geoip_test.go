package geoip_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersvc/countersvc/geoip"
	"github.com/countersvc/countersvc/geoip/geoiptest"
)

var networks = map[string]string{
	"81.2.69.0/24":  "GB",
	"2.16.0.0/13":   "DE",
	"2001:db8::/32": "NZ",
}

// Both formats answer the country of an address inside one of their
// networks, IPv4, IPv4-mapped IPv6 and IPv6 alike, and "" outside them.
func TestCountryIsFoundInBothFormats(t *testing.T) {
	for _, f := range []geoiptest.Format{geoiptest.MaxMind, geoiptest.LocationDB} {
		db, err := geoip.FromBytes(geoiptest.Bytes(t, f, networks))
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		for _, tc := range []struct{ addr, want string }{
			{"81.2.69.160", "GB"},
			{"::ffff:81.2.69.160", "GB"},
			{"2.17.1.1", "DE"},
			{"2001:db8::1", "NZ"},
			{"203.0.113.9", ""},
			{"127.0.0.1", ""},
			{"2001:db9::1", ""},
		} {
			if got := db.Country(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("%v: Country(%s) = %q, want %q", f, tc.addr, got, tc.want)
			}
		}
	}
}

// A file that is not an MMDB database is refused when it is opened, not
// at the first hit.
func TestOpenRefusesWhatIsNoDatabase(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.mmdb")
	os.WriteFile(junk, []byte("not a database"), 0o644)
	for _, path := range []string{junk, filepath.Join(dir, "missing.mmdb")} {
		if _, err := geoip.Open(path); err == nil {
			t.Errorf("Open(%s) succeeded", filepath.Base(path))
		}
	}
	good := geoiptest.File(t, geoiptest.MaxMind, networks)
	if _, err := geoip.Open(good); err != nil {
		t.Errorf("Open(a test database): %v", err)
	}
}
