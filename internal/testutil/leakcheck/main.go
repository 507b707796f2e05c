package leakcheck

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a package's tests and then checks the whole package for
// leaks: no goroutine may outlive the tests and every pooled buffer taken
// during them must be back. Call it from TestMain. Benchmarks run without
// the check: tracking records a stack per pooled buffer, which would be
// most of what they measure.
func Main(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	start := Mark()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines left running after the tests: %v\n", err)
			code = 1
		}
		if report := Buffers(start, settle); report != "" {
			fmt.Fprintln(os.Stderr, report)
			code = 1
		}
	}
	os.Exit(code)
}
