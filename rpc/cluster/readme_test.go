package cluster_test

import (
	"os"
	"strings"
	"testing"
)

// The README's "Many servers" snippet quotes this package's Example: each
// line of its code (comments aside) is a line of example_test.go.
func TestReadmeQuotesTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
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
	for l := range strings.SplitSeq(string(example), "\n") {
		lines[code(l)] = true
	}
	_, section, ok := strings.Cut(string(readme), "## Many servers")
	if !ok {
		t.Fatal("README.md has no section \"Many servers\"")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no Go snippet")
	}
	for l := range strings.SplitSeq(block, "\n") {
		if c := code(l); c != "" && !lines[c] {
			t.Errorf("README's snippet has a line Example lacks: %q", c)
		}
	}
}
