package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/fleet"
)

// Bounds of lifenet fleet's flags: every limit finite.
const (
	fleetMaxConns    = 1_000_000
	fleetMaxDuration = 24 * time.Hour
	fleetMaxRamp     = 1_000_000
	fleetMaxInFlight = 65_536
	fleetMaxBurst    = 64 << 20
)

// fleetCmd is `lifenet fleet`: it holds --conns connections to a server
// and reports the server's memory and CPU per connection (fleet.Run).
func fleetCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflag.New("fleet", "", "  Open and hold many connections to one server (lifenet serve, or a raw echo server with --proto echo),\n"+
		"  each with a call on connect and a heartbeat call per --heartbeat, and report the server's RSS and CPU\n"+
		"  per held connection (--server-pid) and this process's own. On Linux it uses epoll, a few hundred bytes a\n"+
		"  connection; a process opens at most its open-file limit (RLIMIT_NOFILE) of them: run several fleet\n"+
		"  processes (each with its own --sources) beyond that. About 28k connections per source address and server.")
	remote := fs.String("remote", "", "the server, HOST:PORT (required)")
	conns := fs.Int("conns", 1000, "connections to open and hold")
	sources := fs.String("sources", "", "local addresses to bind, round-robin: a comma list, or a range 127.0.0.1-127.0.0.20 (empty: the kernel picks)")
	proto := fs.String("proto", fleet.ProtoSRMP, "srmp (an RPC call of --action) or echo (32 bytes sent, the same 32 expected back)")
	action := fs.String("action", fleet.DefaultAction, "srmp: the action called on connect and per heartbeat")
	burstAction := fs.String("burst-action", fleet.DefaultBurstAction, "srmp: the action the --burst message calls (Bench/EchoPacket or Bench/EchoString)")
	heartbeat := fs.Duration("heartbeat", fleet.DefaultHeartbeat, "each connection's heartbeat period (spread evenly over it)")
	duration := fs.Duration("duration", 60*time.Second, "how long the connections are held after the ramp")
	ramp := fs.String("ramp", "0", "connections opened per second, e.g. 2000/s (0: as fast as the server accepts, --inflight at once)")
	inflight := fs.Int("inflight", fleet.DefaultInFlight, "connects (and first calls, and bursts) in progress at once")
	burst := fs.String("burst", "0", "after the ramp and --idle, each connection sends one message of this size (e.g. 60KiB) and reads the reply (0: none)")
	idle := fs.Duration("idle", fleet.DefaultIdle, "the pause after the ramp before the memory sample (at most --duration)")
	timeout := fs.Duration("timeout", fleet.DefaultTimeout, "a connect's or a reply's limit")
	pids := fs.String("server-pid", "", "the server's process ids (comma list, Linux): RSS and CPU sampled from /proc")
	jsonFile := fs.String("json", "", "also write the report as JSON to this file")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	src, errSrc := fleet.ParseSources(*sources)
	rate, errRate := fleet.ParseRate(*ramp)
	size, errSize := fleet.ParseSize(*burst)
	if errSize != nil {
		errSize = fmt.Errorf("--burst: %w", errSize)
	}
	pidList, errPID := fleet.ParsePIDs(*pids)
	err := errors.Join(
		cliflag.Check(*remote != "", "--remote HOST:PORT is required"),
		cliflag.Between("conns", *conns, 1, fleetMaxConns),
		errSrc,
		cliflag.Check(*proto == fleet.ProtoSRMP || *proto == fleet.ProtoEcho, "--proto %q: want srmp or echo", *proto),
		cliflag.Check(fleet.ValidAction(*action), "--action %q: want 1 to 127 printable ASCII bytes", *action),
		cliflag.Check(fleet.ValidAction(*burstAction), "--burst-action %q: want 1 to 127 printable ASCII bytes", *burstAction),
		cliflag.Between("heartbeat", *heartbeat, 10*time.Millisecond, time.Hour),
		cliflag.Between("duration", *duration, 0, fleetMaxDuration),
		errRate,
		cliflag.Between("ramp", rate, 0, fleetMaxRamp),
		cliflag.Between("inflight", *inflight, 1, fleetMaxInFlight),
		errSize,
		cliflag.Between("burst", size, 0, fleetMaxBurst),
		cliflag.Between("idle", *idle, 0, fleetMaxDuration),
		cliflag.Between("timeout", *timeout, 10*time.Millisecond, 10*time.Minute),
		errPID,
	)
	if err == nil {
		err = fleetLimits(*conns, len(src))
	}
	if err != nil {
		return cliflag.UsageError(stderr, "fleet", err)
	}
	cfg := fleet.Config{
		Remote: *remote, Conns: *conns, Sources: src, Proto: *proto, Action: *action, BurstAction: *burstAction,
		Heartbeat: *heartbeat, Duration: *duration, Ramp: rate, InFlight: *inflight, Burst: int(size),
		Idle: *idle, Timeout: *timeout, ServerPIDs: pidList, Progress: stderr,
	}
	if *idle == 0 {
		cfg.Idle = time.Nanosecond // the flag's 0 is no pause; the Config's is the default
	}
	r, err := fleet.Run(ctx, cfg)
	if r == nil {
		if errors.Is(err, fleet.ErrConfig) {
			return cliflag.UsageError(stderr, "fleet", err)
		}
		fmt.Fprintf(stderr, "lifenet fleet: %v\n", err)
		return cliflag.ExitFail
	}
	writeFleetReport(stdout, r)
	code := cliflag.ExitOK
	if *jsonFile != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if werr := os.WriteFile(*jsonFile, append(b, '\n'), 0o644); werr != nil {
			fmt.Fprintf(stderr, "lifenet fleet: --json: %v\n", werr)
			code = cliflag.ExitFail
		}
	}
	var faults []string
	if err != nil {
		faults = append(faults, err.Error())
	}
	if r.Interrupted {
		faults = append(faults, "interrupted: the report is of the time that ran")
	}
	if r.Refused+r.Failed+r.Lost > 0 {
		faults = append(faults, fmt.Sprintf("%d of %d connections refused, failed or lost", r.Refused+r.Failed+r.Lost, r.Conns))
	}
	if r.CallErrors > 0 {
		faults = append(faults, fmt.Sprintf("%d error replies (first: %s)", r.CallErrors, r.FirstCallError))
	}
	if len(faults) > 0 {
		fmt.Fprintf(stderr, "lifenet fleet: %s\n", strings.Join(faults, "; "))
		code = cliflag.ExitFail
	}
	return code
}

// fleetLimits reports --conns past what this process may open (its
// open-file limit, raised to the hard limit) or past the ephemeral ports
// of its source addresses.
func fleetLimits(conns, sources int) error {
	lim := fleet.RaiseFileLimit()
	if lim == 0 {
		lim = fileLimit()
	}
	if lim > 0 && uint64(conns)+fleet.FileSlack > lim {
		return fmt.Errorf("--conns %d: past this process's open-file limit (RLIMIT_NOFILE %d, less %d for its own files): "+
			"run several fleet processes, each with at most %d connections and its own --sources", conns, lim, fleet.FileSlack, lim-fleet.FileSlack)
	}
	ports, span := fleet.LocalPorts()
	per := conns
	if sources > 0 {
		per = (conns + sources - 1) / sources
	}
	if ports > 0 && per > ports {
		return fmt.Errorf("--conns %d: %d per source address, past the %d ephemeral ports (ip_local_port_range %s): add --sources (e.g. 127.0.0.1-127.0.0.%d)",
			conns, per, ports, span, min(255, (conns+ports-1)/ports))
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// idleRSS is the idle sample of m as text.
func idleRSS(m fleet.MemReport) string {
	if m.RSSIdle == 0 {
		return "after ramp+idle not sampled (the run ended before)"
	}
	return fmt.Sprintf("after ramp+idle %s with %d held: %.0f bytes/conn", mib(m.RSSIdle), m.HeldIdle, m.BytesPerConn)
}

// writeFleetReport prints r for people.
func writeFleetReport(w io.Writer, r *fleet.Report) {
	src := "the kernel's source address"
	if len(r.Sources) > 0 {
		src = fmt.Sprintf("%d source addresses", len(r.Sources))
	}
	fmt.Fprintf(w, "fleet: %d connections to %s from %s, proto %s, heartbeat %s\n", r.Conns, r.Remote, src, r.Proto, r.Heartbeat)
	fmt.Fprintf(w, "  held %d at the end (%d ever), refused %d, failed %d, lost %d; ramp %.2f s\n",
		r.Held, r.EverHeld, r.Refused, r.Failed, r.Lost, r.RampSeconds)
	for _, e := range []struct{ what, text string }{{"refused", r.FirstRefused}, {"failed", r.FirstFailed}, {"lost", r.FirstLost}, {"error reply", r.FirstCallError}} {
		if e.text != "" {
			fmt.Fprintf(w, "  first %s: %s\n", e.what, e.text)
		}
	}
	fmt.Fprintf(w, "  heartbeats answered %d (skipped %d, error replies %d, unexpected %d); RTT p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		r.Heartbeats, r.Skipped, r.CallErrors, r.Unexpected, r.RTTP50, r.RTTP99, r.RTTMax)
	if r.Bursts > 0 {
		fmt.Fprintf(w, "  bursts answered %d\n", r.Bursts)
	}
	if s := r.Server; s != nil {
		if s.Error != "" {
			fmt.Fprintf(w, "  server %v: not all measured: %s\n", s.PIDs, s.Error)
		}
		fmt.Fprintf(w, "  server RSS %v: before %s, %s\n", s.PIDs, mib(s.RSSBefore), idleRSS(s.MemReport))
		for _, b := range s.AfterBurst {
			fmt.Fprintf(w, "    %.0f s after the burst: %s with %d held: %.0f bytes/conn\n", b.AfterSeconds, mib(b.RSS), b.Held, b.BytesPerConn)
		}
		fmt.Fprintf(w, "  server CPU per heartbeat: %.1f µs (%.2f s over %d heartbeats)\n", s.CPUPerBeatUs, s.CPUSeconds, s.CPUHeartbeats)
	}
	if r.Self.Error != "" {
		fmt.Fprintf(w, "  fleet RSS: not measured: %s\n", r.Self.Error)
	} else {
		fmt.Fprintf(w, "  fleet RSS: before %s, %s\n", mib(r.Self.RSSBefore), idleRSS(r.Self))
	}
	if r.Interrupted {
		fmt.Fprintln(w, "  interrupted: the figures are of the time that ran")
	}
}
