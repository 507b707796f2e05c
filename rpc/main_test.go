package rpc_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestMain checks the whole package for leaks once every test has run: no
// goroutine may outlive the tests and every pooled buffer taken during them
// must be back. (Tests that start servers also check themselves one by one,
// through leakcheck.Check in startServer.)
//
// Benchmarks run without it: tracking records a stack per pooled buffer,
// which would be most of what they measure.
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
