package balance_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once every test has run
// (the tests with real servers also check themselves, with
// leakcheck.Check).
func TestMain(m *testing.M) { leakcheck.Main(m) }
