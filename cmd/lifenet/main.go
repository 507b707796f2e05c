// Command lifenet is lifenet's load-test tool: `lifenet load` is NewLife's
// NetLoadTest (a load generator plus a counting/echo server, for lifenet or
// the plain std-net baseline) and `lifenet matrix` its run-matrix, with
// md/json/html reports; `serve`, `call` and `rpcload` are the RPC layer's
// server, shell client and benchmark, which speak to a service registered
// in etcd too (`serve --register`, etcd:// addresses); the lifenet-etcd
// command (cmd/lifenet-etcd, a module of its own) is an etcd to try that
// with on one machine.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/matrix"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/rpctool"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/soak"
)

const usage = `usage: lifenet <command> [flags] [arguments]

commands:
  load     run a load test (NetLoadTest flags: --mode --oneway --clients --size --seconds
           --warmup --udp --server --host --port --remote --frame --udpconnect --recvmode
           --rcvbuf --codec --window --impl --json --idle-exit --first-client); load -h for all
  matrix   run the scenario matrix in separate processes, lifenet beside raw std net (RPC rows: beside net/rpc)
           (--quick --only REGEX --out DIR --seconds --warmup --rounds --clientprocs N --pin --from DIR); writes results.md,
           results.json and results.html
  serve    an RPC server with NewLife's benchmark controller (--host --port --impl lifenet|netrpc --grace);
           SIGINT or SIGTERM shut it down gracefully; --metrics HOST:PORT serves /metrics
           (Prometheus) and /status (JSON); --register etcd://HOST:PORT/SERVICE [--advertise HOST:PORT]
           registers it in etcd (deregistered at shutdown)
  call     call an action of any SRMP/NewLife server: call [--http] [--list] ADDR ACTION [key=value … | JSON];
           ADDR etcd://HOST:PORT/SERVICE calls one of the servers registered there (--balancer)
  rpcload  RPC load test (--remote --impl --conns --inflight --seconds --call --direct --goroutines);
           --remote etcd://HOST:PORT/SERVICE --balancer NAME spreads it over the registered servers
           (lifenet-etcd, a command of its own, is a one-member etcd to try these on one machine)
  soak     leak soak of an rpc and a codec server under churn and injected faults (--minutes --seconds
           --conns --interval --sample --seed --verbose); exit 1 on an upward trend, a resource not back to baseline
           or an unexplained error
  fleet    hold many connections to one server and measure its memory and CPU per connection
           (--remote --conns --sources --proto srmp|echo --heartbeat --duration --ramp --burst --server-pid --json)
  version  the module version, VCS commit and Go version of this binary

lifenet help <command> (or lifenet <command> -h) lists a command's flags and their defaults.
Exit codes: 0 done; 1 the run failed, found a fault, or was interrupted (SIGINT or SIGTERM:
the report is of the time that ran); 2 a bad command line.
`

func main() {
	// SIGINT (Ctrl-C) and SIGTERM (kill, a supervisor) both cancel the
	// command's context: every command stops gracefully and says so. A
	// second signal is not caught (the default: the process ends at once).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// commands are the subcommands: each returns its exit code (0 done, 1
// failed or interrupted, 2 a bad command line).
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"load":    load,
	"matrix":  matrix.Main,
	"serve":   serve,
	"call":    rpctool.Call,
	"rpcload": rpctool.Load,
	"soak":    soak.Main,
	"fleet":   fleetCmd,
	"version": versionCmd,
}

// load is `lifenet load`, its help naming the flags with two dashes as
// every other command's does (cliflag.Command.Usage): loadtest prints
// flag.PrintDefaults's single dash itself.
func load(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if !helpAsked(args) {
		return loadtest.Main(ctx, args, stdout, stderr)
	}
	var help strings.Builder
	code := loadtest.Main(ctx, args, &help, stderr)
	io.WriteString(stdout, cliflag.Dashes(help.String()))
	return code
}

// helpAsked reports whether args hold a flag the flag package takes for a
// request for help (-h, -help, --help, with or without =VALUE) before a
// "--" that ends the flags.
func helpAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if name == "h" || name == "help" {
			return true
		}
	}
	return false
}

// serve is `lifenet serve` with --metrics (the otel module's, which the
// library's module cannot depend on).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return rpctool.ServeWith(ctx, args, stdout, stderr, serveHooks())
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 { // lifenet help load: load's help
			if cmd, ok := commands[args[1]]; ok && len(args) == 2 {
				return cmd(ctx, []string{"--help"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "lifenet help: unknown command %q (lifenet help lists them)\n", strings.Join(args[1:], " "))
			return 2
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "-version", "--version":
		return versionCmd(ctx, args[1:], stdout, stderr)
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "lifenet: unknown command %q (lifenet help lists them)\n", args[0])
	return 2
}

// versionCmd runs `lifenet version`.
func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflag.New("version", "", "  The module version, VCS commit and Go version of this binary.")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	fmt.Fprint(stdout, version(debug.ReadBuildInfo()))
	return 0
}
