package hits

import "slices"

// PublicPrefixes are the names anyone may count page hits on: a site is a
// prefix under one of them (the dashboard tells sites from shops so).
func (s *Service) PublicPrefixes() []string { return slices.Clone(s.public) }

// CountryDatabase is the type of the IP-to-country database that page
// hits' countries come from, as its file names it ("DBIP-Country-Lite",
// "GeoLite2-Country"), or "" when none is loaded and every country is
// Unknown: what the dashboard credits beside the countries, and only then.
func (s *Service) CountryDatabase() string {
	if s.labels == nil || s.labels.countries == nil {
		return ""
	}
	if t, ok := s.labels.countries.(interface{ Type() string }); ok && t.Type() != "" {
		return t.Type()
	}
	return "unnamed"
}
