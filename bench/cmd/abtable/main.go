// Command abtable reads the "SUMMARY: {json}" lines of `lifenet rpcload`
// and grpcload runs on stdin (other lines are skipped) and prints, per
// implementation, the medians of calls/s, P50 latency, server CPU µs and
// bytes per call and client bytes per call, then the ratios of lifenet to
// net/rpc and to grpc-go. ab.sh pipes its rounds into it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/lifenet/lifenet/internal/rpcbench"
)

// columns are the table's figures, each a median over the rounds.
var columns = []struct {
	head string
	get  func(rpcbench.Summary) float64
}{
	{"calls/s", func(s rpcbench.Summary) float64 { return s.CallsPerSec }},
	{"P50 µs", func(s rpcbench.Summary) float64 { return s.P50 }},
	{"P99 µs", func(s rpcbench.Summary) float64 { return s.P99 }},
	{"server CPU µs/call", func(s rpcbench.Summary) float64 { return s.ServerCPU }},
	{"server B/call", func(s rpcbench.Summary) float64 { return s.ServerAlloc }},
	{"client B/call", func(s rpcbench.Summary) float64 { return s.ClientAlloc }},
}

var impls = []string{"lifenet", "netrpc", "grpc"}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "abtable: %v\n", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	runs := map[string][]rpcbench.Summary{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		_, js, ok := strings.Cut(sc.Text(), "SUMMARY: ")
		if !ok {
			continue
		}
		var s rpcbench.Summary
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			return fmt.Errorf("bad SUMMARY line: %v", err)
		}
		runs[s.Impl] = append(runs[s.Impl], s)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(runs) == 0 {
		return fmt.Errorf("no SUMMARY lines")
	}
	med := map[string][]float64{}
	fmt.Fprintf(out, "| impl | rounds | errors |")
	for _, c := range columns {
		fmt.Fprintf(out, " %s |", c.head)
	}
	fmt.Fprintf(out, "\n|---|--:|--:|%s\n", strings.Repeat("--:|", len(columns)))
	for _, impl := range impls {
		rs := runs[impl]
		if len(rs) == 0 {
			continue
		}
		var errs int64
		for _, s := range rs {
			errs += s.Errors
		}
		fmt.Fprintf(out, "| %s | %d | %d |", impl, len(rs), errs)
		for _, c := range columns {
			var vs []float64
			for _, s := range rs {
				if v := c.get(s); v >= 0 { // -1: not measured
					vs = append(vs, v)
				}
			}
			m := median(vs)
			med[impl] = append(med[impl], m)
			fmt.Fprintf(out, " %s |", num(m))
		}
		fmt.Fprintln(out)
	}
	for _, other := range impls[1:] {
		a, b := med["lifenet"], med[other]
		if a == nil || b == nil {
			continue
		}
		fmt.Fprintf(out, "| lifenet/%s | | |", other)
		for i := range columns {
			if a[i] < 0 || b[i] <= 0 { // -1: not measured
				fmt.Fprint(out, " – |")
				continue
			}
			if r := a[i] / b[i]; r < 0.1 {
				fmt.Fprintf(out, " %.3fx |", r)
			} else {
				fmt.Fprintf(out, " %.2fx |", r)
			}
		}
		fmt.Fprintln(out)
	}
	return nil
}

// median is the median of vs, -1 for none.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n == 0 {
		return -1
	}
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func num(v float64) string {
	switch {
	case v < 0:
		return "–"
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
