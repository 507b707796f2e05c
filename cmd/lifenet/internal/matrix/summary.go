package matrix

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Group is one row of the report's summary (results.json "summary"): the
// scenarios of one kind, the median and range of their lifenet/baseline
// ratios, and how many of them are better, worse or within noise.
type Group struct {
	Name        string    `json:"group"` // the kind, "all" or rpcGroup; stable, for dashboards
	Label       string    `json:"label"` // what the row covers, as the report shows it
	Scenarios   int       `json:"scenarios"`
	Median      float64   `json:"median"` // of the scenario ratios
	Min         float64   `json:"min"`
	Max         float64   `json:"max"`
	Better      int       `json:"better"`       // scenarios whose spread across pairs is above 1.0
	WithinNoise int       `json:"within_noise"` // … crosses 1.0
	Worse       int       `json:"worse"`        // … is below 1.0
	OnePair     int       `json:"one_pair"`     // scenarios with a single pair: no spread to judge by
	AtParity    int       `json:"at_parity"`    // scenario ratios ≥ 0.95 (the transport's target; not in the report's tables)
	ratios      []float64 // the scenario ratios, sorted once summarize is done
}

// groupName names the kind of scenario a ratio belongs to (TCP/UDP
// one-way, echo pipeline, round trip, codec, RPC).
func groupName(sc Scenario) string {
	proto := "TCP"
	if sc.Proto == "udp" {
		proto = "UDP"
	}
	switch {
	case sc.isRPC():
		return rpcGroup
	case sc.Codec != "":
		kind := "codec echo, serial requests"
		if sc.Mode == "pipeline" {
			kind = "codec echo, windowed"
		}
		if sc.Proto == "udp" { // the TCP rows keep their names of before
			kind = "UDP " + kind
		}
		return kind
	case sc.Mode == "oneway":
		return proto + " one-way"
	case sc.Mode == "pipeline":
		return proto + " echo pipeline"
	}
	return proto + " round trip"
}

// rpcGroup is the RPC rows' group: their baseline is net/rpc, not raw std
// net, so they stay out of the "all" row and come after it.
const rpcGroup = "RPC vs net/rpc"

// summarize groups the scenarios' ratios, in order of first appearance,
// and appends the row for all of them but the RPC rows (whose baseline is
// another: their group comes last), labelled with what it covers of the
// scenarios run.
func summarize(ps []pair) []Group {
	var out []Group
	index := map[string]int{}
	all := Group{Name: "all"}
	rpc := Group{Name: rpcGroup, Label: rpcGroup}
	for _, p := range ps {
		if p.rounds == 0 {
			continue
		}
		name := groupName(p.sc)
		if name == rpcGroup {
			rpc.add(p)
			continue
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Group{Name: name, Label: name})
		}
		out[i].add(p)
		all.add(p)
	}
	if len(out) > 1 {
		all.Label = fmt.Sprintf("all vs std net: %d of the %d scenarios run", len(all.ratios), len(ps))
		if len(all.ratios) == len(ps) {
			all.Label = fmt.Sprintf("all %d scenarios run", len(ps))
		}
		out = append(out, all)
	}
	if len(rpc.ratios) > 0 {
		out = append(out, rpc)
	}
	for i := range out {
		g := &out[i]
		slices.Sort(g.ratios)
		g.Scenarios, g.Median, g.Min, g.Max = len(g.ratios), median(g.ratios), g.ratios[0], g.ratios[len(g.ratios)-1]
	}
	return out
}

func (g *Group) add(p pair) {
	g.ratios = append(g.ratios, p.ratio)
	if p.ratio >= 0.95 {
		g.AtParity++
	}
	switch p.verdict() {
	case verdictBetter:
		g.Better++
	case verdictWorse:
		g.Worse++
	case verdictNoise:
		g.WithinNoise++
	case verdictOnePair:
		g.OnePair++
	}
}

// ratioText is a group's ratio cell: the median of its scenario ratios,
// with their range when there are several ("**0.97×** (0.41–1.11×)"), the
// single ratio alone when there is one.
func (g Group) ratioText() string {
	if g.Scenarios == 1 {
		return fmt.Sprintf("**%.2f×**", g.Median)
	}
	return fmt.Sprintf("**%.2f×** (%.2f–%.2f×)", g.Median, g.Min, g.Max)
}

// verdictCounts is a group's "2 better · 1 within noise · …" cell.
func (g Group) verdictCounts() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{g.Better, verdictBetter}, {g.WithinNoise, verdictNoise}, {g.Worse, verdictWorse}, {g.OnePair, "one pair"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(parts, " · ")
}

// headline is the report's first sentence: how the scenarios run came
// out, every one of them counted, and what the figures are.
func headline(ps []pair, rounds int) string {
	var better, noise, worse, onePair, failed, direct int
	for _, p := range ps {
		switch p.verdict() {
		case verdictBetter:
			better++
		case verdictNoise:
			noise++
		case verdictWorse:
			worse++
		case verdictOnePair:
			onePair++
		case verdictNone:
			if p.sc.isRPC() && p.sc.Direct {
				direct++
			} else {
				failed++
			}
		}
	}
	if len(ps) == 0 {
		return "No scenario ran."
	}
	how := fmt.Sprintf("medians of %d alternating pairs", rounds)
	if rounds <= 1 {
		how = "one pair each"
	}
	var also []string
	if onePair > 0 {
		also = append(also, fmt.Sprintf("%d with a single pair, no spread to judge by", onePair))
	}
	if failed > 0 {
		also = append(also, fmt.Sprintf("%d without a ratio, a run having failed", failed))
	}
	if direct > 0 {
		also = append(also, fmt.Sprintf("%d without a baseline (the direct RPC path)", direct))
	}
	if len(also) > 0 {
		how += "; " + strings.Join(also, "; ")
	}
	return fmt.Sprintf("lifenet was better in %d, within noise in %d, worse in %d of the %d scenarios run (%s).", better, noise, worse, len(ps), how)
}

// Environment is the machine and build a report was made on, gathered
// once when the matrix starts (see gatherEnvironment).
type Environment struct {
	CPU          string `json:"cpu"`              // /proc/cpuinfo "model name" on Linux, GOARCH otherwise
	Cores        int    `json:"cores"`            // logical cores (runtime.NumCPU)
	GOMAXPROCS   int    `json:"gomaxprocs"`       // of the matrix process
	OS           string `json:"os"`               // GOOS/GOARCH
	Kernel       string `json:"kernel,omitempty"` // Linux: /proc/sys/kernel/osrelease
	Go           string `json:"go"`               // runtime.Version
	Commit       string `json:"commit"`           // the commit measured (+ "-dirty" for uncommitted changes), or "unknown"
	CommitSource string `json:"commit_source,omitempty"`
}

// Where Environment.Commit came from.
const (
	commitFromBuild = "build"         // the binary's VCS stamp
	commitFromGit   = "git rev-parse" // the binary has none (go run, -buildvcs=false): the work tree's HEAD
	commitUnknown   = "none: not a git work tree"
)

// gatherEnvironment reads the environment of this process. The commit is
// the binary's VCS stamp or, when it has none (go run stamps none), the
// HEAD of the git work tree the matrix runs in, with "-dirty" when `git
// status --porcelain` lists changes.
func gatherEnvironment() Environment {
	env := Environment{CPU: runtime.GOARCH, Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Commit: "unknown", CommitSource: commitUnknown}
	if runtime.GOOS == "linux" {
		if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
			if m := cpuModel(string(b)); m != "" {
				env.CPU = m
			}
		}
		if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
			env.Kernel = strings.TrimSpace(string(b))
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok && commitOf(bi.Settings) != "unknown" {
		env.Commit, env.CommitSource = commitOf(bi.Settings), commitFromBuild
	} else if c := gitCommit(""); c != "" {
		env.Commit, env.CommitSource = c, commitFromGit
	}
	return env
}

// gitCommit is the HEAD of the git work tree at dir ("": the current
// directory), "-dirty" appended when it has uncommitted changes, or "" if
// dir is in no work tree (or git is missing).
func gitCommit(dir string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		return cmd.Output()
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(head))
	if st, err := git("status", "--porcelain"); err != nil || len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}

// cpuModel is the first "model name" of a /proc/cpuinfo, or "".
func cpuModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// commitOf is the build's VCS revision, "-dirty" when the tree had
// changes, or "unknown".
func commitOf(settings []debug.BuildSetting) string {
	rev, modified := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}

// writeEnvironment writes the report's "Environment" block.
func writeEnvironment(w io.Writer, rep Report) {
	fmt.Fprintln(w, "## Environment")
	fmt.Fprintln(w)
	e := rep.Env
	if e == nil {
		fmt.Fprintf(w, "- date: %s\n- machine and build: not recorded (results.json predates the environment block)\n\n", rep.Date)
		return
	}
	osName := e.OS
	if e.Kernel != "" {
		osName += ", kernel " + e.Kernel
	}
	commit := e.Commit
	if e.CommitSource != "" {
		commit += " (" + e.CommitSource + ")"
	}
	fmt.Fprintf(w, "- CPU: %s\n- logical cores: %d · GOMAXPROCS: %d\n- OS: %s\n- Go: %s\n- lifenet commit: %s\n- date: %s\n\n",
		e.CPU, e.Cores, e.GOMAXPROCS, osName, e.Go, commit, rep.Date)
}

// writeHowToRead writes the paragraph that says what the ratios mean.
func writeHowToRead(w io.Writer, rep Report) {
	baseline := "the raw std-net loop (`raw`: the same load on plain `net` connections)"
	if rep.hasRPC() {
		baseline += "; for the rpc-* rows, Go's net/rpc; the direct path has none"
	}
	fmt.Fprintln(w, "## How to read this")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Every ratio is lifenet ÷ baseline, where the baseline is %s. "+
		"For rates (Gbps, packets, messages, round trips, calls per second) higher is better and 1.00× is parity; "+
		"for CPU, latency and bytes per message lower is better. "+
		"A scenario runs as alternating pairs (lifenet and its baseline back to back, taking turns going first; `--rounds`, 3 with `--quick`): "+
		"its ratio is the median of the pair ratios and its spread their range. One pair on a shared machine swings about ±30 %%, "+
		"so a ratio counts as better or worse only when its whole spread is above or below 1.00×; "+
		"a spread that crosses 1.00× is within noise, neither a loss nor a win, and a single pair has no spread to judge by. "+
		"Both sides of a scenario do the same work per message, and the verdict's \"lifenet does\" and \"baseline does\" columns say what: "+
		"in the TCP codec rows both clients match every reply to its request (by sequence number for SRMP, by order for the length field) "+
		"and both servers parse and answer every frame (a note marks a row where the baseline's client only counted reply bytes). "+
		"%s "+
		"Notes under a table say why a cell stands out where the tool knows.\n\n", baseline, warmupText(rep.hasRPC()))
}

// warmupText says what the warm-up is and that no figure includes it.
func warmupText(rpc bool) string {
	s := "The warm-up is no part of any figure: a socket run's clients connect and wait out the warm-up, then the byte clients send " +
		"up to 64 priming messages on a connection of their own, which a one-way server tells apart and leaves out of its rate " +
		"(its log's warm-up line)"
	if rpc {
		s += "; the RPC rows make calls through the warm-up and count only the window's"
	}
	return s + "."
}

func (rep Report) hasRPC() bool {
	for _, r := range rep.Results {
		if r.isRPC() {
			return true
		}
	}
	return false
}

// troubled names the scenarios with a failed run or with errors in one
// (failed calls or connections, lost TCP echoes, one-way bytes that never
// reached the server).
func troubled(rs []Result) map[string]bool {
	out := map[string]bool{}
	for _, r := range rs {
		bad := r.Error != "" || r.RPC != nil && r.RPC.Errors > 0
		if c := r.Client; c != nil {
			bad = bad || c.ConnErrors > 0 || r.Proto == "tcp" && c.IntegrityDiff != nil && *c.IntegrityDiff != 0 || c.Warning != ""
		}
		if _, lost := onewayLost(r); lost {
			bad = true
		}
		if bad {
			out[r.Name] = true
		}
	}
	return out
}

// nagleSize is the message size below which lifenet's client keeps
// Nagle's batching (transport.AutoNoDelaySize; NoDelayAuto).
const nagleSize = 16 << 10

// notes says why a scenario's cells stand out, where the tool knows.
func notes(p pair, bad map[string]bool) []string {
	var why []string
	if p.sc.Proto == "tcp" && p.sc.Mode == "roundtrip" && p.sc.Clients == 1 && p.sc.Size < nagleSize {
		why = append(why, "one connection: lifenet's client keeps Nagle's batching for messages under 16 KiB "+
			"(NoDelayAuto) while the raw loop writes with TCP_NODELAY (Go's default), so a write can wait for the peer's ACK")
	}
	if p.sc.Proto == "udp" && p.sc.Codec != "" {
		why = append(why, "both runs send with the raw UDP client: the ratio compares the servers (lifenet's codec server, the baseline's datagram loop)")
	}
	if baselineCounted(p) {
		why = append(why, "not like for like: the baseline's client counted reply bytes without matching them to their requests "+
			"(a report from before it matched, or `--count-replies`), where lifenet's pairs every reply with its request "+
			"(a matcher slot under a lock and a callback each)")
	}
	if bad[p.sc.Name] {
		why = append(why, "a run failed or had errors (see the lists at the end)")
	}
	if p.rounds > 0 && (p.ratio < 0.5 || p.ratio > 2) {
		if p.rounds == 1 {
			why = append(why, fmt.Sprintf("check: one round, %.2f× is outside 0.5–2×; rerun with `--rounds`", p.ratio))
		} else {
			why = append(why, fmt.Sprintf("%.2f× is outside 0.5–2× over %d rounds (%.2f–%.2f)", p.ratio, p.rounds, p.lo, p.hi))
		}
	}
	return why
}

// writeNotes writes the notes of a table's scenarios under it.
func writeNotes(w io.Writer, ps []pair, bad map[string]bool) {
	var lines []string
	for _, p := range ps {
		for _, n := range notes(p, bad) {
			lines = append(lines, fmt.Sprintf("- %s: %s", p.sc.Name, n))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nNotes:\n\n%s\n", strings.Join(lines, "\n"))
	}
}
