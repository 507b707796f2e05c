package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
)

// histSums is a Prometheus text histogram's series summed by rpc_method:
// count, sum, and the cumulative count at each le.
type histSums struct {
	count, sum float64
	le         map[string]float64
}

// histogramOf reads histogram name out of a /metrics page.
func histogramOf(t *testing.T, text, name string) map[string]*histSums {
	t.Helper()
	out := map[string]*histSums{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, name+"_") {
			continue
		}
		open, close := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || close < open {
			continue
		}
		kind, labels := line[len(name)+1:open], line[open+1:close]
		v, err := strconv.ParseFloat(strings.TrimSpace(line[close+1:]), 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		method, le := label(labels, "rpc_method"), label(labels, "le")
		h := out[method]
		if h == nil {
			h = &histSums{le: map[string]float64{}}
			out[method] = h
		}
		switch kind {
		case "count":
			h.count += v
		case "sum":
			h.sum += v
		case "bucket":
			h.le[le] += v
		}
	}
	return out
}

// label is the value of key in a Prometheus label list.
func label(labels, key string) string {
	_, after, ok := strings.Cut(labels, key+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// The server's received-to-written histogram is in /metrics, under a name
// and a HELP that say what it times, counts every answered call the
// handler histogram counts, and each call's value is at least its handler
// time (it adds the wait before and the reply's encoding and write after):
// every bucket's cumulative count is at most the handler histogram's, its
// sum at least theirs. /status shows its quantiles beside the handler's.
func TestServeReceivedToWrittenMetric(t *testing.T) {
	ready, metrics := startServe(t, "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0")
	ctx, cl := callNoArg(t, ready, 20) // inline: run on the reading goroutine
	// Bench/Sleep is not inline: a goroutine each.
	for range 3 {
		if _, err := rpc.Call[int](ctx, cl, "Bench/Sleep", map[string]int{"ms": 2}); err != nil {
			t.Fatal(err)
		}
	}
	cl.Invoke(ctx, "No/Such", nil, nil)

	const name = "lifenet_rpc_server_received_to_written_duration_seconds"
	// The hook that records a call runs once its reply has gone out: the
	// client can have the last reply first. Wait until the page counts
	// every call, then check it.
	want := map[string]float64{"Bench/NoArg": 20, "Bench/Sleep": 3, "_OTHER": 1}
	var text string
	testwait.For(t, 10*time.Second, "/metrics to count every call", func() bool {
		text = get(t, metrics[0])
		recv := histogramOf(t, text, name)
		for method, n := range want {
			if recv[method] == nil || recv[method].count != n {
				return false
			}
		}
		return true
	})
	for _, want := range []string{
		"# TYPE " + name + " histogram",
		"# HELP " + name + " The server's time per answered call from the request's read to its reply's write",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	recv, handler := histogramOf(t, text, name), histogramOf(t, text, "rpc_server_call_duration_seconds")
	for method, calls := range want {
		r, h := recv[method], handler[method]
		if r == nil || h == nil || r.count != calls || h.count != calls {
			t.Errorf("%s: received-to-written %+v, handler %+v; want %g calls in each", method, r, h, calls)
			continue
		}
		if r.sum < h.sum {
			t.Errorf("%s: received-to-written sum %g s < the handler's %g s", method, r.sum, h.sum)
		}
		for le, n := range h.le {
			if r.le[le] > n {
				t.Errorf("%s: %g calls within %s s from the request, only %g within it in the handler", method, r.le[le], le, n)
			}
		}
	}

	var st Status
	if err := json.Unmarshal([]byte(get(t, metrics[1])), &st); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"Bench/NoArg", "Bench/Sleep"} {
		a := st.Actions[method]
		if a.ReceivedToWrittenP50Us <= 0 || a.ReceivedToWrittenP50Us < a.HandlerP50Us || a.ReceivedToWrittenP99Us < a.HandlerP99Us {
			t.Errorf("/status %s: %+v; want received-to-written quantiles at least the handler's", method, a)
		}
	}
}
