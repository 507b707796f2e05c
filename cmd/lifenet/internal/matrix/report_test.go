package matrix

import (
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
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}, "abc123-modified"},
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
			Go: "go1.26.0", Commit: "abc123-modified"}}
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
		"- lifenet commit: abc123-modified",
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
	if strings.Index(got, "## Environment") > strings.Index(got, "## Summary") ||
		strings.Index(got, "## How to read this") > strings.Index(got, "## Summary") {
		t.Error("the environment and how-to-read do not open the report")
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
		"<li>lifenet commit: abc123-modified</li>",
		"<h2>How to read this</h2>",
		"lifenet ÷ baseline",
		"<table>",
		`<th class="num"><b>lifenet/raw</b></th>`,
		`<td class="num"><b>1.06×</b></td>`,
		"<td>tcp-1KB</td>",
		"<code>--rounds</code>",
		`class="ref"`, `stroke-dasharray`, "1.0× parity",
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
	// The ratio chart (peak 3.0×) has round ticks 0, 1, 2, 3 and the 1.0 line.
	ratio := page[strings.Index(page, "throughput ratio"):]
	for _, want := range []string{">0<", ">1<", ">2<", ">3<"} {
		if !strings.Contains(ratio, want) {
			t.Errorf("ratio chart lacks tick %s", want)
		}
	}
	if strings.Contains(ratio, ">0.75<") || strings.Contains(ratio, ">1.50<") {
		t.Error("ratio chart has unround ticks")
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
