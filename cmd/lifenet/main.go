// Command lifenet is lifenet's load-test tool: `lifenet load` is NewLife's
// NetLoadTest (a load generator plus a counting/echo server, for lifenet or
// the plain std-net baseline) and `lifenet matrix` its run-matrix, with
// md/json/html reports; `serve`, `call` and `rpcload` are the RPC layer's
// server, shell client and benchmark.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/matrix"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/rpctool"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/soak"
)

const usage = `usage: lifenet <command> [flags]

commands:
  load     run a load test (NetLoadTest flags: --mode --oneway --clients --size --seconds
           --warmup --udp --server --host --port --remote --frame --udpconnect --recvmode
           --rcvbuf --codec --window --impl --json --idle-exit --first-client); load -h for all
  matrix   run the scenario matrix in separate processes, lifenet beside raw std net (RPC rows: beside net/rpc)
           (--quick --only REGEX --out DIR --seconds --warmup --rounds --clientprocs N --pin --from DIR); writes results.md,
           results.json and results.html
  serve    an RPC server with NewLife's benchmark controller (--host --port --impl lifenet|netrpc)
  call     call an action of any SRMP/NewLife server: call [--http] [--list] ADDR ACTION [k=v … | JSON]
  rpcload  RPC load test (--remote --impl --conns --inflight --seconds --call --direct --goroutines)
  soak     leak soak of an rpc and a codec server under churn and injected faults (--minutes --seconds
           --conns --interval --sample --seed); exit 1 on an upward trend, a resource not back to baseline
           or an unexplained error
  version  the module version, VCS commit and Go version of this binary

<command> -h lists a command's flags and their defaults.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "load":
		return loadtest.Main(ctx, args[1:], stdout, stderr)
	case "matrix":
		return matrix.Main(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "lifenet version: unexpected argument %q\n", args[1])
			return 2
		}
		fmt.Fprint(stdout, version(debug.ReadBuildInfo()))
		return 0
	case "serve":
		return rpctool.Serve(ctx, args[1:], stdout, stderr)
	case "call":
		return rpctool.Call(ctx, args[1:], stdout, stderr)
	case "rpcload":
		return rpctool.Load(ctx, args[1:], stdout, stderr)
	case "soak":
		return soak.Main(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "lifenet: unknown command %q (lifenet help lists them)\n", args[0])
	return 2
}
