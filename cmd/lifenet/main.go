// Command lifenet is lifenet's load-test tool: `lifenet load` is NewLife's
// NetLoadTest (a load generator plus a counting/echo server, for lifenet or
// the plain std-net baseline) and `lifenet matrix` its run-matrix, with
// md/json/html reports. `serve`, `call` and `rpcload` arrive with the RPC
// layer.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/lifenet/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/internal/matrix"
)

const usage = `usage: lifenet <command> [flags]

commands:
  load     run a load test (NetLoadTest flags: --mode --oneway --clients --size --seconds
           --warmup --udp --server --port --remote --frame --udpconnect --recvmode
           --rcvbuf --codec --window --impl --json)
  matrix   run the scenario matrix in separate processes, lifenet beside raw std net
           (--quick --only REGEX --out DIR --clientprocs N --pin); writes results.md,
           results.json and results.html
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
	case "serve", "call", "rpcload":
		fmt.Fprintf(stderr, "lifenet %s: not built yet (see the open issues)\n", args[0])
		return 2
	}
	fmt.Fprintf(stderr, "lifenet: unknown command %q\n%s", args[0], usage)
	return 2
}
