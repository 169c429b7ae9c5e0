package hits

import (
	"fmt"
	"strings"

	"github.com/countersvc/countersvc/counters"
)

// DefaultPublicPrefix is the one public prefix when none is configured.
const DefaultPublicPrefix = "hits/"

// PublicNames are the name prefixes that anyone may count page hits on,
// without a token. Everything else stays private.
type PublicNames []string

// Contains reports whether name is under one of the public prefixes.
func (p PublicNames) Contains(name string) bool {
	for _, prefix := range p {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// ValidatePublicPrefix refuses prefixes that would open more than intended:
// the empty prefix would make every counter public, and a reserved prefix
// would let anyone change the service's own counters.
func ValidatePublicPrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("an empty public prefix would make every counter public")
	}
	if err := counters.ValidateName(prefix); err != nil {
		return fmt.Errorf("public prefix %q: %s", prefix, counters.ErrorMessage(err))
	}
	if counters.IsReserved(prefix) {
		return fmt.Errorf("public prefix %q: names starting with %q are reserved", prefix, counters.ReservedPrefix)
	}
	return nil
}
