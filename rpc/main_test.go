package rpc_test

import (
	"os"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once every test has run
// (tests that start servers also check themselves one by one, with
// leakcheck.Check). In the server child of BenchmarkClientNoArg it serves
// instead.
func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		serveBenchChild()
		return
	}
	leakcheck.Main(m)
}
