package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeBlocks returns the fenced blocks of the README section that starts
// at heading and ends at the next "## " heading, each with its language.
func readmeBlocks(t *testing.T, heading string) (langs, blocks []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for {
		_, rest, ok := strings.Cut(section, "```")
		if !ok {
			return langs, blocks
		}
		lang, rest, ok := strings.Cut(rest, "\n")
		block, after, ok2 := strings.Cut(rest, "```")
		if !ok || !ok2 {
			t.Fatalf("README.md's %q has an unclosed block", heading)
		}
		langs, blocks = append(langs, lang), append(blocks, block)
		section = after
	}
}

// TestReadmeInstall does what README's "Install" tells a user of the
// library, in a temp dir: a link named lifenet to this clone and, beside
// it, hello/ holding the section's Go program as main.go; then the sh
// block after that program runs in hello/ as it is (go mod init, the
// replace lines, go.sum, go mod tidy, go run), with GOPROXY=off so that
// nothing but the module cache the test run already has serves it, and
// GOWORK=off so that no workspace helps. The program must print 3 <nil>.
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("README's install lines are sh: %v", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("README's install lines run go: %v", err)
	}
	langs, blocks := readmeBlocks(t, "## Install")
	var program, lines string
	for i, l := range langs {
		if l == "go" && program == "" {
			program = blocks[i]
		} else if l == "sh" && program != "" && lines == "" {
			lines = blocks[i]
		}
	}
	if program == "" || lines == "" {
		t.Fatal(`README.md's "## Install" has no go block followed by an sh block`)
	}
	if !strings.Contains(lines, "go mod edit -replace github.com/lifenet/lifenet=../lifenet") {
		t.Fatalf("README's install lines replace no github.com/lifenet/lifenet with ../lifenet:\n%s", lines)
	}

	clone, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hello := filepath.Join(dir, "hello")
	must(t, os.Symlink(clone, filepath.Join(dir, "lifenet")))
	must(t, os.Mkdir(hello, 0o755))
	must(t, os.WriteFile(filepath.Join(hello, "main.go"), []byte(program), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-e", "-x", "-c", lines)
	cmd.Dir = hello
	cmd.WaitDelay = 10 * time.Second // a child still holding the pipes after sh is killed
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README's install lines: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\n3 <nil>\n") {
		t.Fatalf("README's program printed no line 3 <nil>:\n%s", out)
	}
	mod, err := os.ReadFile(filepath.Join(hello, "go.mod"))
	must(t, err)
	if !strings.Contains(string(mod), "github.com/lifenet/lifenet v0.0.0-00010101000000-000000000000") {
		t.Errorf("go mod tidy required no github.com/lifenet/lifenet at the replace's stand-in version:\n%s", mod)
	}
}
