package rpc_test

import (
	"os"
	"strings"
	"testing"
)

// The README's RPC snippet quotes the package's Example: each line of its
// code (comments aside) is a line of example_test.go, so the snippet
// compiles and runs as the test of Example does.
func TestReadmeQuotesTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	must(t, err)
	example, err := os.ReadFile("example_test.go")
	must(t, err)
	code := func(line string) string {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		return strings.TrimSpace(line)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(example), "\n") {
		lines[code(l)] = true
	}
	_, section, ok := strings.Cut(string(readme), "## Using the RPC layer")
	if !ok {
		t.Fatal("README.md has no section \"Using the RPC layer\"")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the RPC section has no Go snippet")
	}
	for _, l := range strings.Split(block, "\n") {
		if c := code(l); c != "" && !lines[c] {
			t.Errorf("README's RPC snippet has a line Example lacks: %q", c)
		}
	}
}
