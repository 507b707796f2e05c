package matrix

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/internal/rpcbench"
)

// Seed 002's RPC rows: six call shapes at 1/4/16/32, 100 connections for
// noarg and echo16, 100 callers over 4 connections, the direct path.
func TestRPCScenarios(t *testing.T) {
	var names []string
	byName := map[string]Scenario{}
	for _, s := range Full() {
		if s.isRPC() {
			names = append(names, s.Name)
			byName[s.Name] = s
		}
	}
	if len(names) != 6*4+2+1+1 {
		t.Fatalf("%d RPC rows: %v", len(names), names)
	}
	for _, call := range rpcCalls {
		for _, c := range []string{"c1", "c4", "c16", "c32"} {
			if _, ok := byName["rpc-"+call+"-"+c]; !ok {
				t.Errorf("no rpc-%s-%s", call, c)
			}
		}
	}
	for name, want := range map[string]Scenario{
		"rpc-string2000-c16": {Name: "rpc-string2000-c16", Mode: "rpc", Proto: "tcp", Clients: 16, Call: "string2000", Inflight: 1},
		"rpc-noarg-100conn":  {Name: "rpc-noarg-100conn", Mode: "rpc", Proto: "tcp", Clients: 100, Call: "noarg", Inflight: 1},
		"rpc-echo16-100conn": {Name: "rpc-echo16-100conn", Mode: "rpc", Proto: "tcp", Clients: 100, Call: "echo16", Inflight: 1},
		"rpc-noarg-4x25":     {Name: "rpc-noarg-4x25", Mode: "rpc", Proto: "tcp", Clients: 4, Call: "noarg", Inflight: 25},
		"rpc-direct-noarg":   {Name: "rpc-direct-noarg", Mode: "rpc", Call: "noarg", Direct: true},
	} {
		if got := byName[name]; got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	var quick []string
	for _, s := range Quick() {
		if s.isRPC() {
			quick = append(quick, s.Name)
		}
	}
	if !slices.Equal(quick, []string{"rpc-noarg-c1", "rpc-noarg-100conn"}) {
		t.Errorf("quick RPC rows %v", quick)
	}
	if got := byName["rpc-noarg-c1"].impls(); !slices.Equal(got, []string{"lifenet", "netrpc"}) {
		t.Errorf("rpc impls %v", got)
	}
	if got := byName["rpc-direct-noarg"].impls(); !slices.Equal(got, []string{"lifenet"}) {
		t.Errorf("direct impls %v", got)
	}
	if got := oneway("tcp", 32, 1, "").impls(); !slices.Equal(got, []string{"lifenet", "raw"}) {
		t.Errorf("socket impls %v", got)
	}
	l, err := Filter(Full(), "rpc")
	if err != nil || len(l) != len(names) {
		t.Errorf("--only rpc: %d rows, %v", len(l), err)
	}
	l, err = Filter(Full(), "rpc-noarg-c1$|rpc-direct")
	if err != nil || len(l) != 2 || l[0].Name != "rpc-noarg-c1" || l[1].Name != "rpc-direct-noarg" {
		t.Errorf("--only 'rpc-noarg-c1$|rpc-direct': %v, %v", l, err)
	}
}

func TestRPCArgs(t *testing.T) {
	sc := rpcScenario("rpc-noarg-4x25", "noarg", 4, 25)
	if got, want := strings.Join(sc.serveArgs("netrpc", 7901, 63), " "), "serve --impl netrpc --port 7901 --seconds 63 --grace 5s"; got != want {
		t.Errorf("serve args %q, want %q", got, want)
	}
	got := strings.Join(sc.rpcloadArgs("netrpc", 7901, 2, 0.5), " ")
	want := "rpcload --impl netrpc --remote 127.0.0.1:7901 --conns 4 --inflight 25 --call noarg --seconds 2 --warmup 0.5 --json"
	if got != want {
		t.Errorf("rpcload args\n%q, want\n%q", got, want)
	}
	d := Scenario{Name: "rpc-direct-noarg", Mode: rpcMode, Call: "noarg", Direct: true}
	if got, want := strings.Join(d.rpcloadArgs("lifenet", 0, 1, 0), " "), "rpcload --direct --call noarg --seconds 1 --warmup 0 --json"; got != want {
		t.Errorf("direct args %q, want %q", got, want)
	}
	d.Clients = 3
	if got := strings.Join(d.rpcloadArgs("lifenet", 0, 1, 0), " "); !strings.Contains(got, "--direct --goroutines 3 ") {
		t.Errorf("direct args %q lack --goroutines 3", got)
	}
}

func rpcResult(sc Scenario, impl string, round int, s *rpcbench.Summary) Result {
	r := Result{Scenario: sc, Impl: impl, Round: round, RPC: s}
	if s == nil {
		r.Error = "rpcload: exit status 1"
	}
	return r
}

// RPC runs pair lifenet with net/rpc by calls/s; the direct path has no
// pair; the RPC section, chart and summary group render from canned
// results, and the socket tables leave the RPC rows out.
func TestRPCReport(t *testing.T) {
	sc := rpcScenario("rpc-noarg-c16", "noarg", 16, 1)
	d := Scenario{Name: "rpc-direct-noarg", Mode: rpcMode, Call: "noarg", Direct: true}
	sock := oneway("tcp", 1024, 8, "")
	rs := []Result{
		{Scenario: sock, Impl: "lifenet", Round: 1, Server: &loadtest.Steady{PktPerSec: 100}},
		{Scenario: sock, Impl: "raw", Round: 1, Server: &loadtest.Steady{PktPerSec: 100}},
		rpcResult(sc, "lifenet", 1, &rpcbench.Summary{Impl: "lifenet", Call: "noarg", Conns: 16, Inflight: 1, Calls: 240000,
			CallsPerSec: 120000, P50: 120.5, ServerCPU: 6.25, ServerAlloc: 0, ClientAlloc: 48}),
		rpcResult(sc, "netrpc", 1, &rpcbench.Summary{Impl: "netrpc", Call: "noarg", Conns: 16, Inflight: 1, Calls: 200000,
			CallsPerSec: 100000, P50: 150, ServerCPU: 9.5, ServerAlloc: 312.4, ClientAlloc: 400, Errors: 2, FirstError: "EOF\nmore"}),
		rpcResult(sc, "netrpc", 2, nil), // failed round: no ratio
		rpcResult(sc, "lifenet", 2, &rpcbench.Summary{CallsPerSec: 130000, ServerCPU: -1, ServerAlloc: -1}),
		rpcResult(d, "lifenet", 1, &rpcbench.Summary{Impl: "lifenet", Call: "noarg", Direct: true, Inflight: 2,
			CallsPerSec: 5e6, P50: 0.31, ClientCPU: 0.38, ClientAlloc: 0}),
	}
	ps := pairs(rs)
	if len(ps) != 3 {
		t.Fatalf("%d pairs", len(ps))
	}
	p := ps[1]
	if p.rounds != 1 || p.ratio != 1.2 || p.raw == nil || p.raw.Impl != "netrpc" || p.lifenet.rate() != 120000 {
		t.Fatalf("rpc pair: rounds %d ratio %v raw %+v", p.rounds, p.ratio, p.raw)
	}
	if ps[2].raw != nil || ps[2].rounds != 0 || ps[2].lifenet.rate() != 5e6 {
		t.Fatalf("direct pair %+v", ps[2])
	}
	rep := Report{Date: "d", Seconds: 2, Warmup: 0.5, Rounds: 2, Results: rs}
	var md strings.Builder
	writeMarkdown(&md, rep)
	got := md.String()
	for _, want := range []string{
		"## 4. RPC: lifenet vs net/rpc",
		"| scenario | call | conns×inflight | lifenet calls/s | net/rpc calls/s | **lifenet/net/rpc** | P50 µs lifenet / net/rpc | server CPU µs/call lifenet / net/rpc | server B/call lifenet / net/rpc | client B/call lifenet / net/rpc |",
		"| rpc-noarg-c16 | noarg | 16×1 | 120.0 k | 100.0 k | **1.20×** | 120.5 / 150.0 | 6.25 / 9.50 | 0 / 312 | 48 / 400 |",
		"| rpc-direct-noarg | noarg | 2 | 5.00 M | 0.31 | 0.38 | 0 |",
		"| RPC vs net/rpc | 1 | **1.20×** |",
		"- rpc-noarg-c16 (netrpc): rpcload: exit status 1",
		"- rpc-noarg-c16 (netrpc, round 1): 2 calls failed (first: EOF …)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("results.md lacks %q:\n%s", want, got)
		}
	}
	// The socket tables and the "all" row leave the RPC rows out.
	sections := strings.Split(got, "## ")
	for _, s := range sections {
		if strings.HasPrefix(s, "1.") || strings.HasPrefix(s, "2.") || strings.HasPrefix(s, "3.") {
			if strings.Contains(s, "rpc-") {
				t.Errorf("socket table has RPC rows:\n%s", s)
			}
		}
	}
	if strings.Contains(got, "| all |") {
		t.Error("summary has an all row for one socket group")
	}
	var h strings.Builder
	writeHTML(&h, rep)
	page := h.String()
	// Charts: the one-way bandwidth and the RPC calls/s (the other socket
	// charts have no data and are left out).
	if strings.Count(page, `<div class="chart">`) != 2 || !strings.Contains(page, "RPC calls/s: lifenet vs net/rpc") ||
		!strings.Contains(page, "rpc-noarg-c16 (netrpc, round 1)") || !strings.Contains(page, "<h2>Verdict</h2>") {
		t.Errorf("results.html: %d charts\n%s", strings.Count(page, `<div class="chart">`), page)
	}
	// A report without RPC rows has no RPC section or chart.
	md.Reset()
	writeMarkdown(&md, Report{Results: rs[:2]})
	h.Reset()
	writeHTML(&h, Report{Results: rs[:2]})
	if strings.Contains(md.String(), "RPC") || strings.Contains(h.String(), "RPC") {
		t.Error("RPC section or chart without RPC rows")
	}
}

// One RPC pair and the direct path, run for real as processes of the
// test binary (playing `lifenet serve` and `lifenet rpcload`).
func TestMatrixRunsRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Exe: exe, Out: dir, Seconds: 0.5, Warmup: 0, ClientProcs: 1, Rounds: 2, BasePort: 17950}
	list := []Scenario{
		rpcScenario("rpc-noarg-2x2", "noarg", 2, 2),
		{Name: "rpc-direct-noarg", Mode: rpcMode, Call: "noarg", Direct: true, Clients: 2},
	}
	results := Run(context.Background(), opts, list)
	var order []string
	for _, r := range results {
		order = append(order, r.Name+" "+r.Impl)
		if r.Error != "" || r.RPC == nil || r.RPC.CallsPerSec <= 0 || r.RPC.Impl != r.Impl {
			t.Errorf("%s/%s: %+v %+v", r.Name, r.Impl, r, r.RPC)
		}
		if r.RPC != nil && !r.Direct && (r.RPC.ServerCPU < 0 || r.RPC.Conns != 2 || r.RPC.Inflight != 2) {
			t.Errorf("%s/%s: server figures or shape missing: %+v", r.Name, r.Impl, r.RPC)
		}
	}
	want := []string{"rpc-noarg-2x2 lifenet", "rpc-noarg-2x2 netrpc", "rpc-noarg-2x2 netrpc", "rpc-noarg-2x2 lifenet",
		"rpc-direct-noarg lifenet", "rpc-direct-noarg lifenet"}
	if !slices.Equal(order, want) {
		t.Fatalf("runs %v, want %v", order, want)
	}
	if err := Write(dir, NewReport(opts, results)); err != nil {
		t.Fatal(err)
	}
	rep, err := Read(dir)
	if err != nil || len(rep.Results) != 6 || rep.Results[0].RPC == nil {
		t.Fatalf("results.json: %v", err)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	var raw struct{ Results []map[string]any }
	if json.Unmarshal(js, &raw) != nil || raw.Results[1]["rpc"] == nil || raw.Results[1]["call"] != "noarg" {
		t.Errorf("results.json lacks the rpc summary: %v", raw.Results[1])
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	if !strings.Contains(string(md), "| rpc-noarg-2x2 | noarg | 2×2 |") || !strings.Contains(string(md), "| rpc-direct-noarg | noarg | 2 |") {
		t.Errorf("results.md:\n%s", md)
	}
}
