package otel_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/readme"
)

// The README's first "Observe it" snippet quotes
// Example_serverMetricsAndTraces.
func TestReadmeQuotesTheExample(t *testing.T) {
	readme.CheckQuotes(t, "../README.md", "### Observe it", "example_test.go")
}
