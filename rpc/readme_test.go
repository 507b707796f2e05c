package rpc_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/readme"
)

// The README's RPC snippet quotes the package's Example, so the snippet
// compiles and runs as the test of Example does.
func TestReadmeQuotesTheExample(t *testing.T) {
	readme.CheckQuotes(t, "../README.md", "## Using the RPC layer", "example_test.go")
}

// The README's second "Observe it" snippet quotes ExampleAccessLog.
func TestReadmeQuotesTheAccessLogExample(t *testing.T) {
	readme.CheckNthQuote(t, "../README.md", "### Observe it", 1, "example_accesslog_test.go")
}
