package app_test

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// TestMain stops the service that the tests of apptest.Shared share.
func TestMain(m *testing.M) { os.Exit(apptest.Main(m)) }

// lastCompany hands out company ids, so that tests on the shared service
// each have boards and ticket keys of their own.
var lastCompany atomic.Int64

func newCompany() int64 { return 1000 + lastCompany.Add(1) }
