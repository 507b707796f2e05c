package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// startServe runs `lifenet serve` in this process with args and returns
// the words of its READY and METRICS lines.
func startServe(t *testing.T, args ...string) (ready, metrics []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), pw, io.Discard); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, pr)
		<-done
	})
	sc := bufio.NewScanner(pr)
	for ready == nil && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch f[0] {
		case "READY":
			ready = f[1:]
		case "METRICS":
			metrics = f[1:]
		}
	}
	if ready == nil {
		t.Fatal("serve printed no READY line")
	}
	go io.Copy(io.Discard, pr)
	return ready, metrics
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	return string(b)
}

// callNoArg dials the server of ready (its READY words) and calls
// Bench/NoArg n times, failing t unless each answers 42; the client and
// its context last until t ends.
func callNoArg(t *testing.T, ready []string, n int) (context.Context, *rpc.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	cl, err := rpc.Dial(ctx, strings.TrimPrefix(ready[0], "tcp://"), rpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	for range n {
		var r int32
		if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err != nil || r != 42 {
			t.Fatalf("Bench/NoArg: %d %v", r, err)
		}
	}
	return ctx, cl
}

func TestServeMetricsAndStatus(t *testing.T) {
	ready, metrics := startServe(t, "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0")
	if len(metrics) != 2 {
		t.Fatalf("METRICS line %q", metrics)
	}
	ctx, cl := callNoArg(t, ready, 5)
	cl.Invoke(ctx, "No/Such", nil, nil)
	// A call is counted after its reply's write, so the client may hold
	// its last answer before the server has counted it.
	testwait.For(t, 10*time.Second, "the six calls counted", func() bool {
		var st Status
		return json.Unmarshal([]byte(get(t, metrics[1])), &st) == nil &&
			st.Actions["Bench/NoArg"].Calls == 5 && st.Actions["_OTHER"].Errors == 1
	})

	text := get(t, metrics[0])
	for _, want := range []string{
		`# TYPE rpc_server_call_duration_seconds histogram`,
		// The HELP says what the histogram times: the handler, not the call.
		`# HELP rpc_server_call_duration_seconds Measures the duration of an incoming Remote Procedure Call (RPC) in the server: from the routed request to its encoded result`,
		`rpc_method="Bench/NoArg"`,
		`rpc_system_name="newlife"`,
		`rpc_response_status_code="404"`,
		`rpc_server_request_size_bytes_bucket`,
		`lifenet_server_sessions_accepted_total`,
		`lifenet_server_sessions{`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(text, `rpc_server_call_duration_seconds_count{network_protocol_name="srmp",network_transport="tcp",`) {
		t.Errorf("/metrics lacks the call count by protocol")
	}

	page := get(t, metrics[1])
	var st Status
	if err := json.Unmarshal([]byte(page), &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, `"handler_p99_us"`) || strings.Contains(page, `"p99_us"`) {
		t.Errorf("/status names its quantiles other than handler_p50_us and handler_p99_us:\n%s", page)
	}
	a := st.Actions["Bench/NoArg"]
	if st.Server != "lifenet" || st.Sessions != 1 || st.ByProtocol["SRMP"] != 1 || a.Calls != 5 || a.Errors != 0 || a.HandlerP50Us <= 0 || a.HandlerP99Us < a.HandlerP50Us || st.Actions["_OTHER"].Errors != 1 || st.UptimeSeconds <= 0 {
		t.Errorf("/status: %+v", st)
	}
}

func TestServeMetricsFlag(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"serve", "--port", "0", "--metrics", "nonsense"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--metrics") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestServeTraces: with --traces every call still answers and is counted
// (the spans go to stdout, discarded here; TestServeTracesWritesSpans
// reads them).
func TestServeTraces(t *testing.T) {
	ready, metrics := startServe(t, "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0", "--traces", "1")
	callNoArg(t, ready, 3)
	var text string
	if !testwait.Until(10*time.Second, func() bool {
		text = get(t, metrics[0])
		return strings.Contains(text, `rpc_method="Bench/NoArg"`)
	}) {
		t.Errorf("/metrics has no Bench/NoArg series:\n%.2000s", text)
	}
}

// /status estimates a quantile within the bucket that holds it, as
// histogram_quantile does: 990 calls of 1 ms and 10 of 20 ms.
func TestStatusQuantiles(t *testing.T) {
	b := lnotel.DefaultDurationBuckets
	a := actionTotals{calls: 1000, bounds: b, buckets: make([]uint64, len(b)+1)}
	a.buckets[sort.SearchFloat64s(b, 0.001)] = 990
	a.buckets[sort.SearchFloat64s(b, 0.020)] = 10
	if p50 := a.quantile(0.5); p50 <= 750 || p50 > 1000 {
		t.Errorf("p50 %g µs, want in 1 ms's bucket (750, 1000]", p50)
	}
	if p995 := a.quantile(0.995); p995 <= 10000 || p995 > 25000 {
		t.Errorf("p99.5 %g µs, want in 20 ms's bucket (10000, 25000]", p995)
	}
	if q := (actionTotals{bounds: b, buckets: make([]uint64, len(b)+1)}).quantile(0.5); q != 0 {
		t.Errorf("no calls: quantile %g", q)
	}
}

// The window starts at the newest snapshot a minute old: before a minute
// of snapshots, at the server's start; a snapshot's calls are taken off.
func TestStatusWindow(t *testing.T) {
	start := time.Unix(1000, 0)
	r := &statusRecorder{start: start}
	snap := func(sec int, calls uint64) callSnapshot {
		return callSnapshot{at: start.Add(time.Duration(sec) * time.Second), actions: map[string]actionTotals{"A": {calls: calls, buckets: []uint64{calls}}}}
	}
	for sec := 1; sec <= 90; sec++ {
		r.snaps = append(r.snaps, snap(sec, uint64(10*sec)))
	}
	if base := r.window(start.Add(30 * time.Second)); !base.at.Equal(start) {
		t.Errorf("at 30 s the window starts at %v, want the start", base.at)
	}
	base := r.window(start.Add(90 * time.Second))
	if want := start.Add(30 * time.Second); !base.at.Equal(want) {
		t.Fatalf("at 90 s the window starts at %v, want %v", base.at, want)
	}
	if d := snap(90, 900).actions["A"].since(base.actions["A"]); d.calls != 600 || d.buckets[0] != 600 {
		t.Errorf("calls in the window: %+v", d)
	}
}
