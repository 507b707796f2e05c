package matrix

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/loadtest"
)

// The matrix re-executes its own binary as `lifenet load`; in tests that
// binary is the test binary, which plays the CLI when asked to.
func TestMain(m *testing.M) {
	if os.Getenv("LIFENET_TEST_AS_CLI") == "1" && len(os.Args) > 1 && os.Args[1] == "load" {
		os.Exit(loadtest.Main(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func tinyRun(t *testing.T) (string, []Result) {
	t.Helper()
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Exe: exe, Out: dir, Seconds: 0.6, Warmup: 0, IdleExit: 0.5, ClientProcs: 1, BasePort: 17900}
	list := []Scenario{
		oneway("tcp", 1024, 2, ""),
		{Name: "tcp-1KB-rt", Mode: "roundtrip", Proto: "tcp", Size: 1024, Clients: 2, RecvMode: "sync"},
	}
	results := Run(context.Background(), opts, list)
	if err := Write(dir, NewReport(opts, results)); err != nil {
		t.Fatal(err)
	}
	return dir, results
}

func TestMatrixRunsAndReports(t *testing.T) {
	dir, results := tinyRun(t)
	if len(results) != 4 {
		t.Fatalf("%d results, want 4 (2 scenarios × lifenet, raw)", len(results))
	}
	for _, r := range results {
		if r.Error != "" || r.Server == nil || r.Client == nil || r.Client.MsgsPerSec <= 0 {
			t.Fatalf("%s/%s: %+v", r.Name, r.Impl, r)
		}
	}
	var rep Report
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(js, &rep); err != nil || len(rep.Results) != 4 {
		t.Fatalf("results.json: %v", err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	for _, want := range []string{"## 1. Throughput", "| tcp-1KB |", "## 3. Round-trip", "| tcp-1KB-rt |", "×"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "results.html"))
	if strings.Count(string(page), "<svg") != 4 || strings.Contains(string(page), "http://") && !strings.Contains(string(page), "http://www.w3.org/2000/svg") {
		t.Errorf("results.html: %d charts", strings.Count(string(page), "<svg"))
	}
	chromiumRenders(t, filepath.Join(dir, "results.html"))
}

// chromiumRenders opens the page in headless Chromium, if the machine has
// it, and checks the charts' bars are in the rendered DOM.
func chromiumRenders(t *testing.T, page string) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Log("chromium not installed: skipping the browser check")
		return
	}
	out, err := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if strings.Count(string(out), `class="bar"`) < 4 {
		t.Fatalf("rendered page has %d bars", strings.Count(string(out), `class="bar"`))
	}
}

func TestFilterAndLists(t *testing.T) {
	if _, err := Filter(Full(), "["); err == nil {
		t.Error("bad regexp accepted")
	}
	if _, err := Filter(Full(), "nothing-matches"); err == nil {
		t.Error("empty selection accepted")
	}
	l, err := Filter(Full(), "^udp-.*-rt-")
	if err != nil || len(l) != 4 {
		t.Errorf("udp round trips: %d, %v", len(l), err)
	}
	if len(Full()) < 50 || len(Quick()) != 14 {
		t.Errorf("full %d, quick %d", len(Full()), len(Quick()))
	}
	seen := map[string]bool{}
	for _, s := range Full() {
		if seen[s.Name] {
			t.Errorf("duplicate scenario %s", s.Name)
		}
		seen[s.Name] = true
	}
}
