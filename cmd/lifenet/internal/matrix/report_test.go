package matrix

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		peak     float64
		want     []float64
		decimals int
	}{
		{3.7, []float64{0, 1, 2, 3, 4}, 0},
		{0.37, []float64{0, 0.1, 0.2, 0.3, 0.4}, 1},
		{1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 1},
		{1.2, []float64{0, 0.5, 1, 1.5}, 1},
		{10, []float64{0, 2, 4, 6, 8, 10}, 0},
		{2.3e6, []float64{0, 5e5, 1e6, 1.5e6, 2e6, 2.5e6}, 0},
		{0, []float64{0, 1}, 0},
	} {
		got, dec := niceTicks(c.peak)
		if !slices.Equal(got, c.want) || dec != c.decimals {
			t.Errorf("niceTicks(%v) = %v, %d; want %v, %d", c.peak, got, dec, c.want, c.decimals)
		}
	}
}

func TestEnvironmentHelpers(t *testing.T) {
	if m := cpuModel("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU @ 3.00GHz\n"); m != "Test CPU @ 3.00GHz" {
		t.Errorf("cpuModel = %q", m)
	}
	if m := cpuModel("processor : 0\n"); m != "" {
		t.Errorf("cpuModel without a model name = %q", m)
	}
	for _, c := range []struct {
		s    []debug.BuildSetting
		want string
	}{
		{nil, "unknown"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}, "abc123"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}, "abc123-dirty"},
	} {
		if got := commitOf(c.s); got != c.want {
			t.Errorf("commitOf(%v) = %q, want %q", c.s, got, c.want)
		}
	}
	env := gatherEnvironment()
	if env.Cores < 1 || env.GOMAXPROCS < 1 || env.Go == "" || env.CPU == "" || env.Commit == "" {
		t.Errorf("gatherEnvironment: %+v", env)
	}
}

// cannedReport is a report with the environment given and one scenario of
// each socket kind: a one-way row at parity, a one-connection round trip
// (Nagle), a pipeline with one round far from parity, and a failed run.
func cannedReport() Report {
	ow := oneway("tcp", 1024, 8, "")
	rt := roundtrip("tcp", 32, 1, "sync")
	pl := Scenario{Name: "tcp-1KB-pipe", Mode: "pipeline", Proto: "tcp", Size: 1024, Clients: 4, RecvMode: "sync"}
	fail := Scenario{Name: "tcp-64B-rt-4C", Mode: "roundtrip", Proto: "tcp", Size: 64, Clients: 4, RecvMode: "sync"}
	rs := []Result{
		{Scenario: ow, Impl: "lifenet", Round: 1, Server: &loadtest.Steady{PktPerSec: 3.7e6, Gbps: 3.7}},
		{Scenario: ow, Impl: "raw", Round: 1, Server: &loadtest.Steady{PktPerSec: 3.5e6, Gbps: 3.5}},
		{Scenario: rt, Impl: "lifenet", Round: 1, Client: &loadtest.Summary{MsgsPerSec: 20000, LatencyCount: 1, P50: 40}},
		{Scenario: rt, Impl: "raw", Round: 1, Client: &loadtest.Summary{MsgsPerSec: 25000, LatencyCount: 1, P50: 35}},
		{Scenario: pl, Impl: "lifenet", Round: 1, Client: &loadtest.Summary{MsgsPerSec: 900000}},
		{Scenario: pl, Impl: "raw", Round: 1, Client: &loadtest.Summary{MsgsPerSec: 300000}},
		{Scenario: fail, Impl: "lifenet", Round: 1, Error: "load: exit status 1"},
		{Scenario: fail, Impl: "raw", Round: 1, Client: &loadtest.Summary{MsgsPerSec: 10000}},
	}
	return Report{Date: "2026-11-30 12:00 UTC", Seconds: 2, Warmup: 0.5, Rounds: 1, Results: rs,
		Env: &Environment{CPU: "Canned CPU 9000", Cores: 16, GOMAXPROCS: 8, OS: "linux/amd64", Kernel: "6.1.0-test",
			Go: "go1.26.0", Commit: "abc123-dirty", CommitSource: commitFromGit}, Reproduce: "git checkout abc123 && go run ./cmd/lifenet matrix --quick"}
}

func TestReportSaysWhatIsMeasured(t *testing.T) {
	rep := cannedReport()
	var md strings.Builder
	writeMarkdown(&md, rep)
	got := md.String()
	for _, want := range []string{
		"## Environment",
		"- CPU: Canned CPU 9000",
		"- logical cores: 16 · GOMAXPROCS: 8",
		"- OS: linux/amd64, kernel 6.1.0-test",
		"- Go: go1.26.0",
		"- lifenet commit: abc123-dirty (git rev-parse)",
		"- commit measured: `abc123-dirty` (git rev-parse)",
		"- reproduce: `git checkout abc123 && go run ./cmd/lifenet matrix --quick`",
		"## Verdict",
		"| tcp-1KB | transport client sends; server counts bytes | std conn writes; std loop counts each read | server packets/s | 1 | **1.06×** | – | one pair |",
		"**lifenet was better in 0, within noise in 0, worse in 0 of the 4 scenarios run (one pair each; 3 with a single pair, no spread to judge by; 1 without a ratio, a run having failed).**",
		"measured window 2 s per run, after a warm-up of 0.5 s that no figure includes",
		"The warm-up is no part of any figure",
		"| tcp-1KB | tcp | 1024 | 8 | 3.70 / 3.50 |",
		"- date: 2026-11-30 12:00 UTC",
		"## How to read this",
		"lifenet ÷ baseline",
		"higher is better",
		"lower is better",
		"±30 %",
		"`--rounds`",
		"- tcp-32B-rt-sync-1C: one connection: lifenet's client keeps Nagle's batching",
		"- tcp-1KB-pipe: check: one round, 3.00× is outside 0.5–2×",
		"- tcp-64B-rt-4C: a run failed or had errors",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("results.md lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "net/rpc") {
		t.Error("results.md names net/rpc without RPC rows")
	}
	if i := strings.Index(got, "## Verdict"); i < 0 || i > strings.Index(got, "## 1. Throughput") || i < strings.Index(got, "- reproduce:") {
		t.Error("the commit, the command and the verdict do not open the report")
	}
	if strings.Contains(got, "tcp-1KB: ") {
		t.Error("a note on the one-way row at parity")
	}

	var h strings.Builder
	writeHTML(&h, rep)
	page := h.String()
	for _, want := range []string{
		"<h2>Environment</h2>",
		"<li>CPU: Canned CPU 9000</li>",
		"<li>lifenet commit: abc123-dirty (git rev-parse)</li>",
		"<li>reproduce: <code>git checkout abc123 &amp;&amp; go run ./cmd/lifenet matrix --quick</code></li>",
		"<h2>Verdict</h2>",
		`<tr class="onepair"><td>tcp-1KB</td>`,
		"<h2>How to read this</h2>",
		"lifenet ÷ baseline",
		"<table>",
		`<th class="num"><b>lifenet/raw</b></th>`,
		`<td class="num"><b>1.06×</b></td>`,
		"<td>tcp-1KB</td>",
		"<code>--rounds</code>",
		"Round-trip latency: P50 and P99, lifenet beside raw",
		`<title>lifenet P50 · tcp-32B-rt-sync-1C: 40.0 µs</title>`,
		`<title>lifenet · tcp-1KB: 3.70 Gbps</title>`, // the bandwidth chart: both sides
		`<title>raw (std net) · tcp-1KB: 3.50 Gbps</title>`,
		`<td class="does">std conn writes; std loop counts each read</td>`,
		"<p><b>lifenet was better in 0, within noise in 0, worse in 0 of the 4 scenarios run",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("results.html lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"<pre", "**", "| scenario", "<script", ": 0 ", ": – ", ">0 Gbps"} {
		if strings.Contains(page, bad) {
			t.Errorf("results.html has %q", bad)
		}
	}
	if strings.Contains(strings.ReplaceAll(page, "http://www.w3.org/2000/svg", ""), "http") {
		t.Error("results.html refers to the network")
	}
	if v, c := strings.Index(page, "<h2>Verdict</h2>"), strings.Index(page, `<div class="chart">`); v < 0 || c < v || strings.Index(page, "<h2>Environment</h2>") < c {
		t.Error("results.html does not open with the verdict, then the charts")
	}
}

// A results.json written before the environment was recorded renders
// with the date and says the rest is not recorded.
func TestReportWithoutEnvironment(t *testing.T) {
	rep := cannedReport()
	rep.Env = nil
	var md strings.Builder
	writeMarkdown(&md, rep)
	if !strings.Contains(md.String(), "## Environment") || !strings.Contains(md.String(), "not recorded") {
		t.Errorf("results.md:\n%s", md.String())
	}
}

func TestInlineHTML(t *testing.T) {
	for in, want := range map[string]string{
		"**1.02×**":          "<b>1.02×</b>",
		"a <b> & `x`":        "a &lt;b&gt; &amp; <code>x</code>",
		"lone ** mark":       "lone ** mark",
		"**a** and **b**":    "<b>a</b> and <b>b</b>",
		"`--rounds` a ` b":   "<code>--rounds</code> a ` b",
		"'quoted' \"twice\"": "&#39;quoted&#39; &#34;twice&#34;",
	} {
		if got := inlineHTML(in); got != want {
			t.Errorf("inlineHTML(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without a VCS stamp in the binary the commit is the work tree's HEAD,
// "-dirty" when git status lists changes; outside a work tree, none.
func TestGitCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := gitCommit(dir); got != "" {
		t.Errorf("outside a work tree: %q", got)
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	git("add", "f")
	git("commit", "-q", "-m", "one")
	head := git("rev-parse", "HEAD")
	if got := gitCommit(dir); got != head {
		t.Errorf("clean tree: %q, want %q", got, head)
	}
	os.WriteFile(filepath.Join(dir, "new"), []byte("y"), 0o644)
	if got := gitCommit(dir); got != head+"-dirty" {
		t.Errorf("untracked file: %q, want %q", got, head+"-dirty")
	}
}

// The report's command lines: as run, and from a checkout of the commit.
func TestCommandLines(t *testing.T) {
	for _, c := range []struct {
		exe, commit        string
		args               []string
		command, reproduce string
	}{
		{"/tmp/go-build123/b001/exe/lifenet", "abc", []string{"--quick", "--only", "tcp-1KB|udp"},
			"go run ./cmd/lifenet matrix --quick --only 'tcp-1KB|udp'", "git checkout abc && go run ./cmd/lifenet matrix --quick --only 'tcp-1KB|udp'"},
		{"/usr/local/bin/lifenet", "abc-dirty", []string{"--rounds", "3"},
			"lifenet matrix --rounds 3", "git checkout abc && go run ./cmd/lifenet matrix --rounds 3  # the tree measured had uncommitted changes"},
		{"/usr/local/bin/lifenet", "unknown", []string{"--only", "it's"},
			`lifenet matrix --only 'it'\''s'`, `go run ./cmd/lifenet matrix --only 'it'\''s'  # commit unknown`},
	} {
		command, reproduce := commandLines(c.exe, c.args, c.commit)
		if command != c.command || reproduce != c.reproduce {
			t.Errorf("%s %q:\n got %q\n     %q\nwant %q\n     %q", c.exe, c.args, command, reproduce, c.command, c.reproduce)
		}
	}
}

// results.json carries what a dashboard needs without redoing the
// pairing: the schema version, each scenario's ratio with its spread and
// verdict, the summary, the environment and the command lines; a
// results.json of schema 1 (none of them) is brought up to date by
// --from.
func TestResultsJSON(t *testing.T) {
	sc := oneway("tcp", 1024, 8, "")
	var rs []Result
	for round, pair := range [][2]float64{{100, 100}, {120, 100}, {90, 100}} {
		rs = append(rs, Result{Scenario: sc, Impl: "lifenet", Round: round + 1, Server: &loadtest.Steady{PktPerSec: pair[0]}},
			Result{Scenario: sc, Impl: "raw", Round: round + 1, Server: &loadtest.Steady{PktPerSec: pair[1]}})
	}
	env := Environment{CPU: "c", Cores: 2, GOMAXPROCS: 2, OS: "linux/amd64", Go: "go1.26", Commit: "abc", CommitSource: commitFromGit}
	rep := NewReport(Options{Seconds: 2, Warmup: 0.5, Rounds: 3, Env: &env, Exe: "/bin/lifenet", Args: []string{"--quick"}}, rs)
	dir := t.TempDir()
	if err := Write(dir, rep); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	var got struct {
		SchemaVersion int `json:"schema_version"`
		Headline      string
		Command       string
		Reproduce     string
		Environment   map[string]any
		Ratios        []map[string]any
		Summary       []map[string]any
	}
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != schemaVersion || got.Headline != "lifenet was better in 0, within noise in 1, worse in 0 of the 1 scenarios run (medians of 3 alternating pairs)." ||
		got.Command != "lifenet matrix --quick" || got.Reproduce != "git checkout abc && go run ./cmd/lifenet matrix --quick" ||
		got.Environment["commit"] != "abc" || got.Environment["commit_source"] != commitFromGit {
		t.Errorf("results.json: %s", js)
	}
	want := map[string]any{"scenario": "tcp-1KB", "group": "TCP one-way", "baseline": "raw", "compared_by": "server packets/s", "pairs": 3.0,
		"ratio": 1.0, "min": 0.9, "max": 1.2, "verdict": verdictNoise, "lifenet": 100.0, "baseline_rate": 100.0,
		"lifenet_does": "transport client sends; server counts bytes", "baseline_does": "std conn writes; std loop counts each read"}
	if len(got.Ratios) != 1 {
		t.Fatalf("ratios %v", got.Ratios)
	}
	for k, v := range want {
		if got.Ratios[0][k] != v {
			t.Errorf("ratios[0].%s = %v, want %v", k, got.Ratios[0][k], v)
		}
	}
	if pr, _ := got.Ratios[0]["pair_ratios"].([]any); len(pr) != 3 || pr[0] != 1.0 || pr[1] != 1.2 || pr[2] != 0.9 {
		t.Errorf("pair_ratios %v, want 1, 1.2, 0.9 in round order", got.Ratios[0]["pair_ratios"])
	}
	if len(got.Summary) != 1 || got.Summary[0]["group"] != "TCP one-way" || got.Summary[0]["label"] != "TCP one-way" || got.Summary[0]["within_noise"] != 1.0 || got.Summary[0]["median"] != 1.0 {
		t.Errorf("summary %v", got.Summary)
	}
	// Schema 1: no schema_version, ratios or summary.
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"date":"d","seconds":2,"warmup":0.5,"rounds":3,"results":`+string(mustJSON(t, rs))+`}`), 0o644)
	var out strings.Builder
	if code := Main(context.Background(), []string{"--from", dir}, &out, &out); code != 0 {
		t.Fatalf("--from: exit %d, %s", code, out.String())
	}
	again, err := Read(dir)
	if err != nil || again.SchemaVersion != schemaVersion || len(again.Ratios) != 1 || again.Ratios[0].Verdict != verdictNoise || len(again.Summary) != 1 {
		t.Errorf("rewritten results.json: %v, %+v", err, again)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
