package cluster_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/readme"
)

// The README's "Many servers" snippet quotes this package's Example.
func TestReadmeQuotesTheExample(t *testing.T) {
	readme.CheckQuotes(t, "../../README.md", "## Many servers", "example_test.go")
}
