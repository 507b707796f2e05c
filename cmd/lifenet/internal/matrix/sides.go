package matrix

import "fmt"

// sides says in a short phrase each what the two sides of a scenario do
// per message: lifenet's client and server, and the baseline's. The
// phrases are the report's "lifenet does" and "baseline does" columns and
// results.json's lifenet_does and baseline_does.
func sides(p pair) (lifenet, baseline string) {
	sc := p.sc
	switch {
	case sc.isRPC() && sc.Direct:
		return fmt.Sprintf("Server.Process called in one process (%s), no sockets", sc.Call), "none"
	case sc.isRPC():
		return fmt.Sprintf("lifenet's RPC client and server, %s calls", sc.Call), "net/rpc's client and server, the same calls"
	case sc.Codec != "" && sc.Proto == "udp":
		return "raw UDP client counts replies; codec server answers each frame",
			"raw UDP client counts replies; std datagram loop answers each frame"
	case sc.Codec != "" && sc.Mode == "oneway":
		return "codec client writes frames; codec server parses each", "std client writes frames; std frame loop parses each"
	case sc.Codec != "":
		how := "one request at a time"
		if sc.Mode == "pipeline" {
			how = fmt.Sprintf("%d requests in flight", codecWindow(sc))
		}
		match := "by sequence number"
		if sc.Codec == "lengthfield" {
			match = "by order"
		}
		lifenet = fmt.Sprintf("codec client, %s, matches each reply %s to its caller; codec server echoes", how, match)
		baseline = fmt.Sprintf("std client, %s, matches each reply %s to its caller; std frame loop echoes", how, match)
		if baselineCounted(p) {
			baseline = fmt.Sprintf("std client, %s, counts reply bytes (no matching); std frame loop echoes", how)
		}
		return lifenet, baseline
	case sc.Mode == "oneway" && sc.RcvBuf > 0:
		buf := fmt.Sprintf(" (%d KiB receive buffers)", sc.RcvBuf>>10)
		if sc.RcvBuf%(1<<20) == 0 {
			buf = fmt.Sprintf(" (%d MiB receive buffers)", sc.RcvBuf>>20)
		}
		return "transport client sends; server counts bytes" + buf, "std conn writes; std loop counts each read" + buf
	case sc.Mode == "oneway":
		return "transport client sends; server counts bytes", "std conn writes; std loop counts each read"
	case sc.Mode == "pipeline":
		return "transport client streams and counts echoed bytes; server echoes",
			"std conn streams and counts echoed bytes; std loop echoes each read"
	}
	return "transport client sends a message, waits for its echo; server echoes",
		"std conn sends a message, reads its echo; std loop echoes each read"
}

// codecWindow is a windowed codec scenario's requests in flight per
// connection (loadtest's default: SRMP's 255).
func codecWindow(sc Scenario) int {
	if sc.Window > 0 {
		return sc.Window
	}
	return 255
}

// baselineCounted reports whether a TCP codec echo row's baseline client
// counted reply bytes instead of matching each reply to its request: its
// summary does not say "matched" (a report from before the baseline's
// client matched, or a run with --count-replies).
func baselineCounted(p pair) bool {
	sc := p.sc
	if sc.Codec == "" || sc.Proto != "tcp" || sc.Mode == "oneway" || sc.isRPC() || p.raw == nil || p.raw.Client == nil {
		return false
	}
	return p.raw.Client.Replies != "matched"
}
