package rpctool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/transport"
)

func TestFlagErrorsAreOneLineAndExit2(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cmd  func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{Serve, []string{"--impl", "grpc"}, "--impl"},
		{Serve, []string{"--port", "70000"}, "--port"},
		{Serve, []string{"--host", "not-an-ip"}, "--host"},
		{Serve, []string{"--nope"}, "flag provided but not defined"},
		{Load, []string{"--call", "bogus"}, "--call"},
		{Load, []string{"--conns", "0"}, "--conns"},
		{Load, []string{"--seconds", "0"}, "--seconds"},
		{Load, []string{"--recvmode", "pull"}, "--recvmode"},
		{Load, []string{"--direct", "--impl", "netrpc"}, "--direct"},
		{Call, nil, "missing ADDR"},
		{Call, []string{"127.0.0.1:1"}, "missing ACTION"},
		{Call, []string{"127.0.0.1:1", "A/B", "novalue"}, "key=value"},
		{Call, []string{"127.0.0.1:1", "A/B", "{bad json"}, "not valid JSON"},
		// through etcd
		{Load, []string{"--remote", "etcd://127.0.0.1:2379/bench", "--balancer", "fastest"}, "want one of failover, round-robin, weighted, p2c, hash, race"},
		{Load, []string{"--remote", "etcd://127.0.0.1:2379"}, "no SERVICE"},
		{Load, []string{"--remote", "etcd://127.0.0.1:2379/bench", "--attempts", "11"}, "--attempts"},
		{Load, []string{"--remote", "etcd://127.0.0.1:2379/bench", "--impl", "netrpc"}, "lifenet servers only"},
		{Load, []string{"--remote", "127.0.0.1:5500", "--balancer", "p2c"}, "need --remote etcd://"},
		{Load, []string{"--balancer", "p2c"}, "need --remote etcd://"},
		{Serve, []string{"--register", "etcd://127.0.0.1/bench"}, "not HOST:PORT"},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--impl", "netrpc"}, "lifenet servers only"},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--host", "0.0.0.0"}, "needs --advertise"},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--advertise", "0.0.0.0:5500"}, "--advertise"},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--advertise", "10.0.0.1:0"}, "--advertise"},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--ttl", "1s"}, "--ttl"},
		{Serve, []string{"--advertise", "10.0.0.1:5500"}, "need --register"},
		{Call, []string{"--http", "etcd://127.0.0.1:2379/bench", "A/B"}, "--http"},
		{Call, []string{"--balancer", "nope", "etcd://127.0.0.1:2379/bench", "A/B"}, "want one of failover"},
		{Call, []string{"--balancer", "p2c", "127.0.0.1:1", "A/B"}, "need an ADDR etcd://"},
		{Call, []string{"etcd://127.0.0.1:2379/a/b", "A/B"}, "may not contain"},
	} {
		var out, errOut bytes.Buffer
		code := c.cmd(ctx, c.args, &out, &errOut)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line naming %s", c.args, code, msg, c.want)
		}
	}
}

// serveForTest runs `serve` on a free port and returns its address.
func serveForTest(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Serve(ctx, append([]string{"--port", "0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if err != nil || !strings.HasPrefix(line, "READY tcp://") {
		t.Fatalf("serve printed %q, %v", line, err)
	}
	return strings.TrimPrefix(strings.Fields(line)[1], "tcp://")
}

func TestServeAndCall(t *testing.T) {
	addr := serveForTest(t)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{addr, "Bench/Add", "a=1", "b=2"}, "3\n"},
		{[]string{addr, "bench/noarg"}, "42\n"},
		{[]string{addr, "Bench/EchoString", `{"input":"hi"}`}, "hi\n"},
		{[]string{"--http", addr, "Bench/Add", "a=20", "b=22"}, "42\n"},
	} {
		var out, errOut bytes.Buffer
		if code := Call(ctx, c.args, &out, &errOut); code != 0 || out.String() != c.want {
			t.Errorf("call %q: exit %d, out %q, err %q; want %q", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Call(ctx, []string{"--list", addr}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Bench/MultiArgs") {
		t.Errorf("call --list: exit %d, out %q", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Call(ctx, []string{addr, "Bench/Nope"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "404") {
		t.Errorf("call of a missing action: exit %d, stderr %q; want 1 and the 404", code, errOut.String())
	}
}

// runLoadForTest runs a short rpcload and returns its summary.
func runLoadForTest(t *testing.T, args ...string) rpcbench.Summary {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--seconds", "0.3", "--warmup", "0.1", "--json")
	if code := Load(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("rpcload %q: exit %d, %s", args, code, errOut.String())
	}
	js, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "SUMMARY: ")
	var s rpcbench.Summary
	if !ok || json.Unmarshal([]byte(js), &s) != nil {
		t.Fatalf("rpcload printed %q", out.String())
	}
	return s
}

func TestRPCLoadShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("load runs")
	}
	lifenet := serveForTest(t)
	netrpc := serveForTest(t, "--impl", "netrpc")
	for _, shape := range rpcbench.Shapes {
		for impl, addr := range map[string]string{"lifenet": lifenet, "netrpc": netrpc} {
			s := runLoadForTest(t, "--impl", impl, "--remote", addr, "--call", shape, "--conns", "2", "--inflight", "2")
			if s.Calls == 0 || s.Errors != 0 || s.ServerCPU < 0 || s.P50 <= 0 || s.InProcess {
				t.Errorf("%s %s: %+v", impl, shape, s)
			}
		}
	}
	s := runLoadForTest(t, "--direct", "--goroutines", "2")
	if s.Calls == 0 || s.Errors != 0 || !s.InProcess {
		t.Errorf("direct: %+v", s)
	}
	if s := runLoadForTest(t, "--conns", "2"); s.Calls == 0 || !s.InProcess || s.ServerCPU >= 0 {
		t.Errorf("a server in this process: %+v, want inProcess and no server figures", s)
	}
	_ = time.Second
}

// --recvmode names the client's modes: default leaves rpc's own choice
// (the zero mode, which reads on the callers' goroutines over plain TCP),
// event keeps a receive goroutine, sync has the callers read over any
// socket.
func TestRecvModesNameTheClientModes(t *testing.T) {
	want := map[string]transport.ReceiveMode{"default": transport.ReceiveEvent, "event": transport.ReceivePull, "sync": transport.ReceiveSync}
	if len(want) != len(recvModes) {
		t.Fatalf("recvModes %v, want the %d values tested here", recvModes, len(want))
	}
	for name, mode := range want {
		if got, ok := recvModes[name]; !ok || got != mode {
			t.Errorf("--recvmode %s: mode %v (known %v), want %v", name, got, ok, mode)
		}
	}
}

// The progress line counts the warm-up's calls too: a warm-up second
// showed 0 calls/s, which reads as a server that does not answer.
func TestRPCLoadProgressCountsTheWarmUp(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--conns", "1", "--warmup", "1.3", "--seconds", "0.2"}
	if code := Load(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("rpcload %q: exit %d, %s", args, code, errOut.String())
	}
	var line string
	for l := range strings.Lines(errOut.String()) {
		if strings.Contains(l, "warm-up") {
			line = l
		}
	}
	if line == "" || strings.Contains(line, " 0 calls/s") {
		t.Fatalf("the warm-up's progress line %q, want its calls counted; stderr:\n%s", line, errOut.String())
	}
}
