// Package geoiptest builds small MMDB country databases for tests, in
// either format geoip reads, with maxmind/mmdbwriter (MaxMind's own
// writer), so that no test needs a real database or the network.
package geoiptest

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Format is how a database names a network's country.
type Format int

const (
	// MaxMind is MaxMind's and DB-IP's: {"country": {"iso_code": "DE"}}.
	MaxMind Format = iota
	// LocationDB is the ip-location-db packages': {"country_code": "DE"}.
	LocationDB
)

func (f Format) String() string {
	if f == LocationDB {
		return "ip-location-db"
	}
	return "MaxMind"
}

// Bytes is a database that maps each network (CIDR) to its country code.
func Bytes(tb testing.TB, f Format, countries map[string]string) []byte {
	tb.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: "Test-Country", RecordSize: 24, IPVersion: 6,
		Description:             map[string]string{"en": "countries for a test"},
		IncludeReservedNetworks: true, // so that tests may use the documentation ranges
	})
	if err != nil {
		tb.Fatal(err)
	}
	for cidr, code := range countries {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			tb.Fatal(err)
		}
		var rec mmdbtype.Map
		if f == LocationDB {
			rec = mmdbtype.Map{"country_code": mmdbtype.String(code)}
		} else {
			rec = mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(code)}}
		}
		if err := tree.Insert(network, rec); err != nil {
			tb.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// File writes Bytes to a file in the test's temporary directory and
// returns its path, for COUNTERS_GEOIP_DB.
func File(tb testing.TB, f Format, countries map[string]string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "country.mmdb")
	if err := os.WriteFile(path, Bytes(tb, f, countries), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
