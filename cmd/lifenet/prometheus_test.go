package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
)

// A real Prometheus (Debian's package) scrapes `lifenet serve --metrics`
// every second while `lifenet rpcload` runs a fixed load of Bench/Latency
// (1 ms, 20 ms for 2 % of the calls) for 10 s; Prometheus's HTTP API then
// gives the action's call rate, which agrees with rpcload's within 5 %,
// and the p99 from the server's histogram, which falls inside rpcload's
// own p95–max band. Every process is started here and killed by its PID.
func TestPrometheusScrapesServe(t *testing.T) {
	if debugBuild {
		t.Skip("runs in the normal build only")
	}
	if testing.Short() {
		t.Skip("a 20-second run")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed (scripts/test.sh installs Debian's package)")
		}
		t.Skip("prometheus not on PATH: apt-get install prometheus (scripts/test.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	dir := t.TempDir()

	bin := filepath.Join(dir, "lifenet")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// lifenet serve --metrics
	serve := exec.CommandContext(ctx, bin, "serve", "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0", "--seconds", "50")
	stdout, err := serve.StdoutPipe()
	must(t, err)
	must(t, serve.Start())
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	var rpcAddr, metricsURL string
	sc := bufio.NewScanner(stdout)
	for rpcAddr == "" && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) > 1 && f[0] == "METRICS":
			metricsURL = f[1]
		case len(f) > 1 && f[0] == "READY":
			rpcAddr = strings.TrimPrefix(f[1], "tcp://")
		}
	}
	if rpcAddr == "" || metricsURL == "" {
		t.Fatalf("serve printed no READY/METRICS lines (%v)", sc.Err())
	}
	go io.Copy(io.Discard, stdout)
	mu, err := url.Parse(metricsURL)
	must(t, err)

	// Prometheus, scraping it every second, on a free loopback port.
	promAddr := freeAddr(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: lifenet\n    metrics_path: %s\n    static_configs:\n      - targets: ['%s']\n", mu.Path, mu.Host)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(cfgFile, []byte(cfg), 0o644))
	prom := exec.CommandContext(ctx, promBin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promLog, err := os.Create(filepath.Join(dir, "prometheus.log"))
	must(t, err)
	prom.Stdout, prom.Stderr = promLog, promLog
	must(t, prom.Start())
	t.Cleanup(func() { prom.Process.Kill(); prom.Wait() })
	api := "http://" + promAddr
	waitFor(t, ctx, "Prometheus ready", func() bool {
		res, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	const count = `rpc_server_call_duration_seconds_count{job="lifenet",rpc_method="Bench/Latency",rpc_response_status_code="0"}`
	waitFor(t, ctx, "the lifenet target up", func() bool {
		v, ok := query(t, api, `up{job="lifenet"}`, time.Now())
		return ok && v == 1
	})

	// One call first, so that the action's series exist, flat, in a few
	// scrapes before the load: a series born inside the window starts at a
	// count above zero, and Prometheus before 2.51 (Debian's is 2.42)
	// extrapolates each bucket of such a series to its own zero point, or
	// half an interval when that lies past 1.1 intervals. When the first
	// scrape comes about an interval after the first call, some buckets
	// fall on either side of that line and increase() makes a lower
	// bucket larger than +Inf, which histogram_quantile flattens to a p99
	// below the slow calls (prometheus/prometheus#13725).
	warmUp(t, ctx, rpcAddr)
	waitFor(t, ctx, "three scrapes of the action's series", func() bool {
		v, ok := query(t, api, `count_over_time(`+count+`[10s])`, time.Now())
		return ok && v >= 3
	})

	// The fixed load.
	load := exec.CommandContext(ctx, bin, "rpcload", "--remote", rpcAddr, "--call", "latency", "--conns", "4", "--inflight", "1",
		"--seconds", "10", "--warmup", "0", "--json")
	begin := time.Now()
	out, err := load.Output()
	end := time.Now()
	if err != nil {
		t.Fatalf("rpcload: %v\n%s", err, out)
	}
	var s rpcbench.Summary
	line := strings.TrimSpace(string(out))
	if i := strings.LastIndex(line, "SUMMARY: "); i < 0 || json.Unmarshal([]byte(line[i+len("SUMMARY: "):]), &s) != nil {
		t.Fatalf("rpcload printed %q", out)
	}
	if s.Calls < 1000 || s.Errors != 0 {
		t.Fatalf("rpcload: %+v", s)
	}
	time.Sleep(2500 * time.Millisecond) // the last scrapes

	// The rate over the whole load, as rpcload's is: a shorter window
	// would see only part of a load whose pace a busy machine varies.
	rateQ := fmt.Sprintf(`sum(rate(%s[%dms]))`, count, end.Sub(begin).Milliseconds())
	rate, ok := query(t, api, rateQ, end)
	if !ok {
		t.Fatalf("no result for %s", rateQ)
	}
	if d := math.Abs(rate-s.CallsPerSec) / s.CallsPerSec; d > 0.05 {
		t.Errorf("Prometheus's rate %.1f calls/s, rpcload's %.1f: %.1f %% apart, want ≤ 5 %%; the samples it had:\n%s", rate, s.CallsPerSec, 100*d,
			samples(t, api, count+"[30s]", end.Add(2*time.Second)))
	}
	const buckets = `rpc_server_call_duration_seconds_bucket{job="lifenet",rpc_method="Bench/Latency"}`
	after := end.Add(2 * time.Second)
	// From 3 s before the load: the window holds flat samples of every
	// bucket before it (the warm-up call's).
	p99Q := fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (increase(%s[%dms])))`, buckets, after.Sub(begin).Milliseconds()+3000)
	p99, ok := query(t, api, p99Q, after)
	if !ok {
		t.Fatalf("no result for %s", p99Q)
	}
	p99Us := p99 * 1e6
	if p99Us < s.P95 || p99Us > s.Max {
		t.Errorf("Prometheus's p99 %.0f µs outside rpcload's p95–max band [%.0f, %.0f] µs; the samples it had:\n%s", p99Us, s.P95, s.Max,
			samples(t, api, buckets+"[30s]", after))
	}
	// The server's request-to-result histogram (README's query, over the
	// same span): each call's value is at least its handler time, so its
	// p99 is at least the handler's, and below the slowest call rpcload saw.
	const received = `lifenet_rpc_server_received_to_written_duration_seconds_bucket{job="lifenet",rpc_method="Bench/Latency"}`
	recvQ := fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (increase(%s[%dms])))`, received, after.Sub(begin).Milliseconds()+3000)
	recv, ok := query(t, api, recvQ, after)
	if !ok {
		t.Fatalf("no result for %s", recvQ)
	}
	if recvUs := recv * 1e6; recvUs < p99Us || recvUs > s.Max {
		t.Errorf("Prometheus's received-to-written p99 %.0f µs, want from the handlers' %.0f µs to rpcload's max %.0f µs; the samples it had:\n%s", recvUs, p99Us, s.Max,
			samples(t, api, received+"[30s]", after))
	}
	t.Logf("rpcload: %d calls, %.1f calls/s, p95 %.0f µs, p99 %.0f µs, max %.0f µs; Prometheus: %.1f calls/s, p99 %.0f µs (handlers), %.0f µs (received to result)",
		s.Calls, s.CallsPerSec, s.P95, s.P99, s.Max, rate, p99Us, recv*1e6)
}

// warmUp makes one Bench/Latency call to the server at addr.
func warmUp(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	cl, err := rpc.Dial(ctx, "tcp://"+addr, rpc.ClientConfig{})
	must(t, err)
	defer cl.Close()
	var r int32
	must(t, cl.Invoke(ctx, "Bench/Latency", rpcbench.LatencyArgs{Min: 1000, Max: 1000}, &r))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	// Below the kernel's ephemeral range (32768 and up on Linux, 49152 on
	// Windows and macOS): a port that range hands out (to a `:0` listener,
	// an outgoing connection) could be taken between this check and the
	// child's own bind, which a clean-clone run saw once for the etcd.
	for range 100 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err == nil {
			defer l.Close()
			return l.Addr().String()
		}
	}
	t.Fatal("no free port in 20000-31999")
	return ""
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// query evaluates an instant query at at; ok is false without a single
// numeric result.
func query(t *testing.T, api, q string, at time.Time) (float64, bool) {
	t.Helper()
	res, err := http.Get(api + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}.Encode())
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if json.NewDecoder(res.Body).Decode(&r) != nil || r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, false
	}
	str, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	return v, err == nil && !math.IsNaN(v)
}

// samples lists the raw samples of a range selector at at, one line per
// series (its labels, then time:value pairs), so that a failed check shows
// what Prometheus scraped.
func samples(t *testing.T, api, sel string, at time.Time) string {
	t.Helper()
	res, err := http.Get(api + "/api/v1/query?" + url.Values{"query": {sel}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}.Encode())
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string
				Values [][2]any
			}
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range r.Data.Result {
		fmt.Fprintf(&b, "le=%s code=%s:", s.Metric["le"], s.Metric["rpc_response_status_code"])
		for _, v := range s.Values {
			ts, _ := v[0].(float64)
			fmt.Fprintf(&b, " %.1f:%v", ts-float64(at.Unix()), v[1])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
