// Package readme checks that a README's Go snippets quote tested Examples.
package readme

import (
	"os"
	"strings"
	"testing"
)

// CheckQuotes fails t unless every code line (comments aside) of the first
// Go snippet under the README heading is a line of the example file, so
// the snippet compiles and runs as the Example's test does.
func CheckQuotes(t testing.TB, readmePath, heading, examplePath string) {
	t.Helper()
	CheckNthQuote(t, readmePath, heading, 0, examplePath)
}

// CheckNthQuote is CheckQuotes for the nth Go snippet (from 0) under the
// heading.
func CheckNthQuote(t testing.TB, readmePath, heading string, nth int, examplePath string) {
	t.Helper()
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for l := range strings.SplitSeq(string(example), "\n") {
		lines[code(l)] = true
	}
	_, section, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("%s has no section %q", readmePath, heading)
	}
	var block string
	for i := 0; i <= nth; i++ {
		var ok, ok2 bool
		_, section, ok = strings.Cut(section, "```go\n")
		block, section, ok2 = strings.Cut(section, "```")
		if !ok || !ok2 {
			t.Fatalf("the section %q has no Go snippet %d", heading, nth)
		}
	}
	for l := range strings.SplitSeq(block, "\n") {
		if c := code(l); c != "" && !lines[c] {
			t.Errorf("the snippet under %q has a line %s lacks: %q", heading, examplePath, c)
		}
	}
}

// code is a line without its comment and surrounding space.
func code(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}
