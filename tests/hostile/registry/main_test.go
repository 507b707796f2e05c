package registry_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once its tests are done (each
// test checks its own too).
func TestMain(m *testing.M) { leakcheck.Main(m) }
