package cluster_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once every test has run
// (tests that start servers also check themselves one by one, with
// leakcheck.Check).
func TestMain(m *testing.M) { leakcheck.Main(m) }
