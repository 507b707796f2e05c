package rpc_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// benchServerEnv, set in a child of the test binary, makes TestMain serve
// Bench/NoArg instead of running tests (see serveBenchChild).
const benchServerEnv = "LIFENET_RPC_BENCH_SERVER"

// BenchmarkClientNoArg is one caller's serial calls of Bench/NoArg to a
// server in a child process, so that a count of this process's
// instructions (scripts/instrs.sh) is the client's alone: impl=lifenet is
// rpc.Client.Invoke, impl=bare a caller that writes the request's bytes and
// reads the reply's frame on its own goroutine, the floor a client can
// reach (docs/perf/rpc.md, "The client's cost"); impl=lifenet-goroutine is
// a client that keeps a receive goroutine, as one with OnPush does;
// impl=bare-drain and impl=floor (Linux) are the bare caller with the
// check for a closed peer before each request, and that with rpc's
// encoding and decoding: the least a client of this wire does.
func BenchmarkClientNoArg(b *testing.B) { benchClients(b, startBenchChild(b)) }

// benchClients runs the clients' rows against the server at addr.
func benchClients(b *testing.B, addr string) {
	b.Run("impl=lifenet", func(b *testing.B) { benchClientInvoke(b, addr, rpc.ClientConfig{}) })
	b.Run("impl=lifenet-goroutine", func(b *testing.B) { benchClientInvoke(b, addr, withReceiveGoroutine) })
	b.Run("impl=floor", func(b *testing.B) { benchFloor(b, addr) })
	b.Run("impl=bare-drain", func(b *testing.B) { benchBareDrain(b, addr) })
	b.Run("impl=bare", func(b *testing.B) {
		c, err := net.Dial("tcp", addr)
		must(b, err)
		defer c.Close()
		req, buf := srmpRequest("Bench/NoArg"), make([]byte, 64<<10)
		call := func() {
			if err := baseline.Call(c, baseline.SRMP, req, buf); err != nil {
				b.Fatal(err)
			}
		}
		call()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			call()
		}
	})
}

// BenchmarkClientSerial is BenchmarkClientNoArg in one process, so that
// its instruction count (scripts/instrs.sh) repeats to about 1 % rather
// than the ±15 % of a count that waits for another process: the server is
// a plain std-net loop (internal/baseline) answering every request with
// Bench/NoArg's reply, 42, as BenchmarkRequestSerial's echo does in codec.
// Its share is the same in every row, so the rows' differences are the
// clients'.
func BenchmarkClientSerial(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	srv := baseline.ServeFrames(l, baseline.SRMP, answer42)
	b.Cleanup(srv.Close)
	benchClients(b, l.Addr().String())
}

// answer42 answers an SRMP request with the reply a lifenet server gives
// Bench/NoArg: the request's flag, sequence and action name, and the data
// 42.
var answer42 = baseline.Answer(noArgReply)

// noArgReply is the payload of a lifenet server's reply to Bench/NoArg.
const noArgReply = "\x0bBench/NoArg\x02\x00\x00\x0042"

// withReceiveGoroutine is a client config that keeps a receive goroutine
// (Mode ReceivePull, which rpc treats as event mode), where the default
// client reads its replies on the caller's goroutine.
var withReceiveGoroutine = func() rpc.ClientConfig {
	var cfg rpc.ClientConfig
	cfg.Transport.Mode = transport.ReceivePull
	return cfg
}()

// benchClientInvoke is b.N serial Invokes of Bench/NoArg by a client of cfg.
func benchClientInvoke(b *testing.B, addr string, cfg rpc.ClientConfig) {
	ctx := context.Background()
	cl, err := rpc.Dial(ctx, addr, cfg)
	must(b, err)
	defer cl.Close()
	var r int32
	must(b, cl.Invoke(ctx, "Bench/NoArg", nil, &r))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err != nil || r != 42 {
			b.Fatal(r, err)
		}
	}
}

// srmpRequest is an SRMP request frame (flag 1, sequence 1) calling action
// with no arguments.
func srmpRequest(action string) []byte {
	f := []byte{0x01, 0x01, 0, 0}
	binary.LittleEndian.PutUint16(f[2:], uint16(1+len(action)))
	f = append(f, byte(len(action)))
	return append(f, action...)
}

// startBenchChild starts the test binary again as a server of Bench/NoArg
// and returns its address; the child ends when its stdin closes, at the
// end of b.
func startBenchChild(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(b, err)
	stdout, err := cmd.StdoutPipe()
	must(b, err)
	must(b, cmd.Start())
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait() // with SIGCHLD ignored (below) the kernel reaps the child, and Wait's error is no news
	})
	ignoreChildExit()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the server child: %v", err)
	}
	return strings.TrimSpace(line)
}

// serveBenchChild is the child's whole life: serve Bench/NoArg on loopback,
// print the address, and stop when stdin closes.
func serveBenchChild() {
	srv, err := rpc.NewServer(rpc.Config{})
	if err == nil {
		err = rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline())
	}
	var addr net.Addr
	if err == nil {
		addr, err = srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(1)
	}
	fmt.Println(addr)
	os.Stdin.Read(make([]byte, 1))
	srv.Close()
}
