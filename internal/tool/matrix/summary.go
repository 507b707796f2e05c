package matrix

import (
	"fmt"
	"io"
	"slices"
)

// group is one row of the report's summary: the scenarios of one kind and
// the spread of their lifenet/raw ratios.
type group struct {
	name           string
	ratios         []float64 // each scenario's ratio (median over rounds), sorted
	atParity, near int       // scenarios at ≥ 0.95× and ≥ 0.90×
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
	case sc.Codec != "" && sc.Mode == "pipeline":
		return "codec echo, windowed"
	case sc.Codec != "":
		return "codec echo, serial requests"
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
// and appends the row for all of them (but the RPC rows, whose group
// comes last).
func summarize(ps []pair) []group {
	var out []group
	index := map[string]int{}
	all := group{name: "all"}
	rpc := group{name: rpcGroup}
	for _, p := range ps {
		if p.rounds == 0 {
			continue
		}
		name := groupName(p.sc)
		if name == rpcGroup {
			rpc.add(p.ratio)
			continue
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, group{name: name})
		}
		out[i].add(p.ratio)
		all.add(p.ratio)
	}
	if len(out) > 1 {
		out = append(out, all)
	}
	if len(rpc.ratios) > 0 {
		out = append(out, rpc)
	}
	for i := range out {
		slices.Sort(out[i].ratios)
	}
	return out
}

func (g *group) add(ratio float64) {
	g.ratios = append(g.ratios, ratio)
	if ratio >= 0.95 {
		g.atParity++
	}
	if ratio >= 0.90 {
		g.near++
	}
}

func writeSummary(w io.Writer, ps []pair) {
	gs := summarize(ps)
	if len(gs) == 0 {
		return
	}
	fmt.Fprintln(w, "## Summary")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| group | scenarios | median of the scenario ratios | range | ≥ 0.95× | ≥ 0.90× |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, g := range gs {
		fmt.Fprintf(w, "| %s | %d | **%.2f×** | %.2f–%.2f× | %d | %d |\n", g.name, len(g.ratios),
			median(g.ratios), g.ratios[0], g.ratios[len(g.ratios)-1], g.atParity, g.near)
	}
	fmt.Fprintln(w)
}
