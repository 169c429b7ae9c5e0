package app_test

import (
	"fmt"
	"sync/atomic"
)

// lastOwn hands out prefixes, see own.
var lastOwn atomic.Int64

// own returns a name prefix of the calling test's own ("t12-"), for tests
// on the shared service (apptest.Shared): they share one database, so each
// names its counters under its prefix, and a listing, an export or a reset
// of a prefix sees only the test's own counters. The prefix needs no
// escaping in a path.
func own() string { return fmt.Sprintf("t%d-", lastOwn.Add(1)) }
