// Package geoip tells the country of an address from an MMDB file: MaxMind's
// and DB-IP's country databases (country.iso_code), or the ip-location-db
// packages' (country_code), such as DB-IP's "IP to Country Lite" that
// scripts/geoip installs (CC BY 4.0, updated monthly; see docs/page-hits.md).
//
// The file is read whole into memory (a country database is a few MiB), so
// that there is nothing to close and a file replaced on disk does not
// change under the running service: a restart loads the new one. Lookups
// are read-only and safe for concurrent use; the reader is
// oschwald/maxminddb-golang, the maintained reader that MaxMind's own Go
// libraries are built on.
package geoip

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/oschwald/maxminddb-golang/v2"
)

// DB is an IP-to-country database.
type DB struct {
	r *maxminddb.Reader
}

// Open reads the MMDB file at path and checks that it is one.
func Open(path string) (*DB, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return FromBytes(b)
}

// FromBytes opens an MMDB file's contents, which must not change after.
func FromBytes(b []byte) (*DB, error) {
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, fmt.Errorf("not an MMDB file: %w", err)
	}
	return &DB{r: r}, nil
}

// record reads both formats at once: the fields one of them lacks stay "".
type record struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	CountryCode string `maxminddb:"country_code"`
}

// Country is the ISO 3166-1 alpha-2 code of a's country, or "" when the
// database does not know it (private ranges, gaps, a record without one).
func (d *DB) Country(a netip.Addr) string {
	var rec record
	if err := d.r.Lookup(a.Unmap()).Decode(&rec); err != nil {
		return ""
	}
	if rec.Country.ISOCode != "" {
		return rec.Country.ISOCode
	}
	return rec.CountryCode
}

// Type is the database's type from its metadata, such as
// "DBIP-Country-Lite" or "GeoLite2-Country", for the start-up log.
func (d *DB) Type() string { return d.r.Metadata.DatabaseType }
