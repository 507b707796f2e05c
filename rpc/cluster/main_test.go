package cluster_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once every test has run
// (each test checks itself too, with leakcheck.Check). Benchmarks run
// without it.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	start := leakcheck.Mark()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines left running after the tests: %v\n", err)
			code = 1
		}
		if report := leakcheck.Buffers(start, 2*time.Second); report != "" {
			fmt.Fprintln(os.Stderr, report)
			code = 1
		}
	}
	os.Exit(code)
}
