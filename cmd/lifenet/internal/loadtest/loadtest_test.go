package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

func TestParseRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--clients", "0"}, {"--clients", "100000"}, {"--size", "0"}, {"--seconds", "-1"},
		{"--recvmode", "poll"}, {"--impl", "gnet"}, {"--nope"},
		{"--server", "--remote", "127.0.0.1:1"}, {"extra"}, {"--clients", "x"}, {"--window", "16"},
		{"--idle-exit", "0"}, {"--codec", "json"}, {"--codec", "srmp", "--size", "4"}, {"--codec", "srmp", "--udp", "--size", "4"},
		{"--codec", "srmp", "--window", "256"}, {"--codec", "lengthfield", "--size", "70000"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "nope"}, "--mode"},
		{[]string{"--mode", ""}, "--mode"},
		{[]string{"--recvmode", "poll"}, "--recvmode"},
		{[]string{"--codec", "json"}, "--codec"},
		{[]string{"--impl", "gnet"}, "--impl"},
		{[]string{"--clients", "-1"}, "--clients"},
		{[]string{"--size", "-5"}, "--size"},
		{[]string{"--seconds", "0"}, "--seconds"},
		{[]string{"--warmup", "-1"}, "--warmup"},
		{[]string{"--port", "-1"}, "--port"},
		{[]string{"--frame", "-1"}, "--frame"},
		{[]string{"--rcvbuf", "-1"}, "--rcvbuf"},
		{[]string{"--window", "-1", "--codec", "srmp"}, "--window"},
		{[]string{"--idle-exit", "-1"}, "--idle-exit"},
		{[]string{"--first-client", "0"}, "--first-client"},
		{[]string{"--host", "example"}, "--host"},
		{[]string{"--host", "0.0.0.0", "--remote", "127.0.0.1:7800"}, "--host"},
		{[]string{"--remote", "127.0.0.1"}, "--remote"},
		{[]string{"--remote", "127.0.0.1:0"}, "--remote"},
		{[]string{"--clients", "x"}, "-clients"},
		{[]string{"--nope"}, "-nope"},
		{[]string{"extra"}, "extra"},
	} {
		var stderr bytes.Buffer
		if code := Main(context.Background(), c.args, io.Discard, &stderr); code != 2 ||
			strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q: want 2 and one line naming %s", c.args, code, stderr.String(), c.want)
		}
	}
	for _, ok := range [][]string{{"--host", "0.0.0.0"}, {"--host", "::"}, {"--host", "localhost"}, {"--remote", "[::1]:7800"}, {"--mode", "ROUNDTRIP"},
		{"--codec", "srmp", "--udp"}, {"--codec", "lengthfield", "--udp", "--impl", "raw", "--window", "16"}} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
	c, err := Parse([]string{"--mode", "RoundTrip", "--recvmode", "asyncpull", "--udp", "--size", "100000", "--frame", "24"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != "roundtrip" || c.RecvMode != "async" || c.Size != 65496 {
		t.Fatalf("normalized %+v (want roundtrip, async, 65507 clamped to a multiple of 24)", c)
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--clients", "0"}, io.Discard, &stderr); code != 2 ||
		strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--clients") {
		t.Fatalf("exit %d, stderr %q: want 2 and one line naming the flag", code, stderr.String())
	}
}

func summaryOf(t *testing.T, out string) Summary {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, "SUMMARY: "); ok {
			var s Summary
			if err := json.Unmarshal([]byte(js), &s); err != nil {
				t.Fatalf("SUMMARY is not JSON: %v", err)
			}
			return s
		}
	}
	t.Fatalf("no SUMMARY line in:\n%s", out)
	return Summary{}
}

// Each mode, both implementations, TCP and UDP, in one process: the
// SUMMARY is present and sane.
func TestInProcessRuns(t *testing.T) {
	leakcheck.Check(t)
	cases := [][]string{
		{"--oneway"}, {"--mode", "pipeline"}, {"--mode", "roundtrip"},
		{"--mode", "pipeline", "--recvmode", "event"}, {"--mode", "roundtrip", "--recvmode", "async"},
		{"--mode", "roundtrip", "--recvmode", "event"}, {"--udp", "--mode", "roundtrip", "--recvmode", "event"},
		{"--udp", "--oneway"}, {"--udp", "--mode", "roundtrip", "--udpconnect"},
		{"--codec", "srmp", "--mode", "roundtrip"}, {"--codec", "srmp", "--window", "64"},
		{"--codec", "lengthfield", "--mode", "pipeline"}, {"--codec", "lengthfield", "--oneway"},
	}
	for _, impl := range []string{"lifenet", "raw"} {
		for _, extra := range cases {
			args := append([]string{"--seconds", "0.4", "--warmup", "0", "--clients", "2", "--size", "512", "--impl", impl}, extra...)
			var out, errOut bytes.Buffer
			if code := Main(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
			}
			s := summaryOf(t, out.String())
			if s.Impl != impl || s.Clients != 2 || s.Size != 512 || s.MsgsPerSec <= 0 {
				t.Errorf("%v: summary %+v", args, s)
			}
			if s.SentBytes == 0 {
				t.Errorf("%v: sentBytes 0", args)
			}
			if !s.InProcess || !strings.Contains(out.String(), "process     : ") || strings.Contains(out.String(), "client      : ") {
				t.Errorf("%v: the CPU line of a run with its server in process is not named the process's:\n%s", args, out.String())
			}
			if s.Mode == "roundtrip" && !(s.LatencyCount > 0 && s.P50 <= s.P95 && s.P95 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) {
				t.Errorf("%v: latency %+v", args, s)
			}
			if s.Mode == "pipeline" && (s.RecvBytes == 0 || s.IntegrityDiff == nil || *s.IntegrityDiff != 0) {
				t.Errorf("%v: pipeline lost data: %+v", args, s)
			}
		}
	}
}

// The separate-server flow: READY first, then a STEADY line once the
// client is done, then the server exits by itself.
func TestServerModeSteady(t *testing.T) {
	leakcheck.Check(t)
	cfg, err := Parse([]string{"--server", "--port", "0", "--size", "256", "--oneway"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.IdleExit = time.Second
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- RunServer(context.Background(), cfg, pw); pw.Close() }()
	lines := make(chan string, 100) // read continuously: the server must never block on its output
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	ready := <-lines
	addr, ok := strings.CutPrefix(ready, "READY tcp://")
	if !ok {
		t.Fatalf("first line %q", ready)
	}
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"--remote", addr, "--oneway", "--size", "256", "--seconds", "1.5", "--warmup", "0", "--clients", "2"}, &out, io.Discard); code != 0 {
		t.Fatalf("client exit %d", code)
	}
	if s := summaryOf(t, out.String()); s.InProcess || !strings.Contains(out.String(), "client      : ") {
		t.Errorf("a client of a server elsewhere: inProcess %v, output:\n%s", s.InProcess, out.String())
	}
	var steady, js string
	for l := range lines {
		switch {
		case strings.HasPrefix(l, "[server] STEADY"):
			steady = l
		case strings.HasPrefix(l, "STEADY-JSON "):
			js = strings.TrimPrefix(l, "STEADY-JSON ")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var st Steady
	if err := json.Unmarshal([]byte(js), &st); err != nil || st.PktPerSec <= 0 || st.Samples == 0 || st.CPUPerMsg <= 0 {
		t.Fatalf("STEADY %q / %q (%v)", steady, js, err)
	}
	for _, want := range []string{"MB/s", "Gbps=", "pkt=", "alloc=", "B/msg", "gc="} {
		if !strings.Contains(steady, want) {
			t.Errorf("STEADY line lacks %q: %s", want, steady)
		}
	}
}

// A single-process run on a wildcard address prints a progress line a
// second on stderr (not a terminal: plain lines) and the rates note.
func TestInProcessProgressAndHost(t *testing.T) {
	leakcheck.Check(t)
	var out, errOut bytes.Buffer
	args := []string{"--host", "0.0.0.0", "--mode", "roundtrip", "--seconds", "1.3", "--warmup", "0", "--clients", "1", "--size", "64"}
	if code := Main(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "[client] 1/1 s") || strings.Contains(errOut.String(), "\r") {
		t.Errorf("stderr %q: want a plain progress line", errOut.String())
	}
	if !strings.Contains(out.String(), "rates       : one request in flight") {
		t.Errorf("no rates note in:\n%s", out.String())
	}
	if s := summaryOf(t, out.String()); s.SentBytes < uint64(s.LatencyCount)*64 {
		t.Errorf("sentBytes %d for %d round trips", s.SentBytes, s.LatencyCount)
	}
	out.Reset()
	errOut.Reset()
	if code := Main(context.Background(), append(args, "--json"), &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Fatalf("--json: exit %d, stderr %q", code, errOut.String())
	}
}

// A server that no client reaches says so and fails.
func TestServerWithoutClientFails(t *testing.T) {
	leakcheck.Check(t)
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"--server", "--port", "0", "--host", "127.0.0.1", "--first-client", "1"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "no client") || strings.Count(errOut.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "READY tcp://127.0.0.1:") || strings.Contains(out.String(), "STEADY") {
		t.Fatalf("stdout %q", out.String())
	}
}

func TestUnreachableServerFailsCleanly(t *testing.T) {
	leakcheck.Check(t)
	var errOut bytes.Buffer
	code := Main(context.Background(), []string{"--remote", "127.0.0.1:1", "--seconds", "1", "--warmup", "0"}, io.Discard, &errOut)
	if code != 1 || strings.Count(errOut.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// hangUpServer echoes for a while, then closes every connection: the
// client must count the failures, not end quietly.
func hangUpServer(t *testing.T, after time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(after))
				io.Copy(c, c)
			})
		}
	})
	return l.Addr().String()
}

func TestMidRunFailuresCounted(t *testing.T) {
	leakcheck.Check(t)
	for _, impl := range []string{"lifenet", "raw"} {
		for _, mode := range []string{"roundtrip", "pipeline"} {
			addr := hangUpServer(t, 300*time.Millisecond)
			var out bytes.Buffer
			args := []string{"--remote", addr, "--impl", impl, "--mode", mode, "--seconds", "1", "--warmup", "0", "--clients", "2", "--size", "256", "--json"}
			Main(context.Background(), args, &out, io.Discard)
			s := summaryOf(t, out.String())
			if s.ConnErrors != 2 || s.FirstError == "" {
				t.Errorf("%s %s: connErrors %d, firstError %q; want both connections counted", impl, mode, s.ConnErrors, s.FirstError)
			}
		}
	}
}

// UDP round trips survive lost datagrams: a request whose echo is a second
// overdue is given up (sync, async) or sent again (event), and the run goes
// on. The server here drops every third datagram.
func TestUDPRoundTripLoss(t *testing.T) {
	leakcheck.Check(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer pc.Close()
	wg.Go(func() {
		buf := make([]byte, 2048)
		for n := 1; ; n++ {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n%3 != 0 {
				pc.WriteTo(buf[:k], from)
			}
		}
	})
	for _, mode := range []string{"sync", "async", "event"} {
		args := []string{"--remote", pc.LocalAddr().String(), "--udp", "--mode", "roundtrip", "--recvmode", mode,
			"--seconds", "2.5", "--warmup", "0", "--clients", "1", "--size", "64"}
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errOut.String())
		}
		// Two echoes, a lost one (a second), two more, another lost: at
		// least 4 samples show the run went on past a loss.
		if s := summaryOf(t, out.String()); s.LatencyCount < 4 || s.ConnErrors != 0 {
			t.Errorf("%s: %+v", mode, s)
		}
	}
}

func TestRoundSignificantKeepsSmallLosses(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0}, {100 * 4.0 / 90000, 0.00444}, {12.3456, 12.3}, {99.96, 100}, {0.5, 0.5},
	} {
		if got := roundSignificant(c.in, 3); got != c.want {
			t.Errorf("roundSignificant(%v, 3) = %v, want %v", c.in, got, c.want)
		}
	}
}
