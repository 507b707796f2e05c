// Package matrix implements `lifenet matrix`: NewLife's run-matrix.ps1. It
// runs each scenario as a separate server process and client process of
// `lifenet load`, once with lifenet and once with the std-net baseline, and
// writes results.md, results.json and a self-contained results.html.
package matrix

import (
	"fmt"
	"strconv"
)

// Scenario is one row of the matrix.
type Scenario struct {
	Name       string `json:"name"`
	Mode       string `json:"mode"` // oneway, pipeline, roundtrip
	Proto      string `json:"proto"`
	Size       int    `json:"size"`
	Clients    int    `json:"clients"`
	Frame      int    `json:"frame,omitempty"`
	RecvMode   string `json:"recvmode"`
	UDPConnect bool   `json:"udpconnect,omitempty"`
	Codec      string `json:"codec,omitempty"` // srmp or lengthfield: lifenet runs its codec, raw the baseline's per-message loop and client
	Window     int    `json:"window,omitempty"`
	// RcvBuf is SO_RCVBUF on both ends of both sides (0: the OS default).
	RcvBuf int `json:"rcvbuf,omitempty"`
	// RPC rows (Mode "rpc"): `lifenet serve` and `lifenet rpcload`,
	// lifenet beside Go's net/rpc. Clients is the connection count (for
	// Direct, the calling goroutines; 0: rpcload's default, GOMAXPROCS).
	Call     string `json:"call,omitempty"`     // call shape: noarg, echo16, echo2000, string16, string2000, multi
	Inflight int    `json:"inflight,omitempty"` // callers per connection
	Direct   bool   `json:"direct,omitempty"`   // Server.Process in one process: lifenet only, no server, no baseline
}

// rpcMode is the Mode of the RPC rows.
const rpcMode = "rpc"

// isRPC says the scenario runs `serve` and `rpcload` rather than `load`.
func (s Scenario) isRPC() bool { return s.Mode == rpcMode }

// impls are the implementations the scenario runs, lifenet first: the
// baseline is raw std net for the socket rows, Go's net/rpc for the RPC
// rows, none for the direct path.
func (s Scenario) impls() []string {
	switch {
	case s.isRPC() && s.Direct:
		return []string{"lifenet"}
	case s.isRPC():
		return []string{"lifenet", "netrpc"}
	}
	return []string{"lifenet", "raw"}
}

// serveArgs are the `lifenet serve` arguments of an RPC row's server; it
// exits by itself after bound seconds should nothing stop it first, and
// its shutdown's grace is shorter than the wait of stopServer.
func (s Scenario) serveArgs(impl string, port int, bound float64) []string {
	return []string{"serve", "--impl", impl, "--port", strconv.Itoa(port), "--seconds", strconv.FormatFloat(bound, 'f', -1, 64), "--grace", "5s"}
}

// rpcloadArgs are the `lifenet rpcload` arguments of an RPC row's client
// (port is unused for the direct path).
func (s Scenario) rpcloadArgs(impl string, port int, seconds, warmup float64) []string {
	a := []string{"rpcload"}
	if s.Direct {
		a = append(a, "--direct")
		if s.Clients > 0 {
			a = append(a, "--goroutines", strconv.Itoa(s.Clients))
		}
	} else {
		a = append(a, "--impl", impl, "--remote", fmt.Sprintf("127.0.0.1:%d", port),
			"--conns", strconv.Itoa(s.Clients), "--inflight", strconv.Itoa(max(s.Inflight, 1)))
	}
	return append(a, "--call", s.Call, "--seconds", strconv.FormatFloat(seconds, 'f', -1, 64),
		"--warmup", strconv.FormatFloat(warmup, 'f', -1, 64), "--json")
}

// rpcCalls are NewLife's RpcBenchmarks call shapes.
var rpcCalls = []string{"noarg", "echo16", "echo2000", "string16", "string2000", "multi"}

func rpcScenario(name, call string, conns, inflight int) Scenario {
	return Scenario{Name: name, Mode: rpcMode, Proto: "tcp", Clients: conns, Call: call, Inflight: inflight}
}

// rpcScenarios are the RPC rows: each call shape at 1, 4, 16 and
// 32 concurrent calls (NewLife's RpcBenchmarks: a connection per caller,
// one call in flight on each), 100 connections for throughput, 100
// callers multiplexed over 4 connections, and the direct path.
func rpcScenarios() []Scenario {
	var l []Scenario
	for _, call := range rpcCalls {
		for _, c := range []int{1, 4, 16, 32} {
			l = append(l, rpcScenario(fmt.Sprintf("rpc-%s-c%d", call, c), call, c, 1))
		}
	}
	for _, call := range []string{"noarg", "echo16"} {
		l = append(l, rpcScenario(fmt.Sprintf("rpc-%s-100conn", call), call, 100, 1))
	}
	l = append(l, rpcScenario("rpc-noarg-4x25", "noarg", 4, 25))
	l = append(l, Scenario{Name: "rpc-direct-noarg", Mode: rpcMode, Call: "noarg", Direct: true})
	return l
}

// commonArgs returns the `lifenet load` flags shared by server and client.
func (s Scenario) commonArgs() []string {
	a := []string{"--size", strconv.Itoa(s.Size)}
	if s.Proto == "udp" {
		a = append(a, "--udp")
	}
	if s.Mode == "oneway" {
		a = append(a, "--oneway")
	}
	if s.Frame > 0 {
		a = append(a, "--frame", strconv.Itoa(s.Frame))
	}
	if s.Codec != "" {
		a = append(a, "--codec", s.Codec)
	}
	if s.RcvBuf > 0 {
		a = append(a, "--rcvbuf", strconv.Itoa(s.RcvBuf))
	}
	return a
}

func (s Scenario) clientArgs() []string {
	a := append(s.commonArgs(), "--clients", strconv.Itoa(s.Clients), "--recvmode", s.RecvMode)
	if s.Mode != "oneway" {
		a = append(a, "--mode", s.Mode)
	}
	if s.UDPConnect {
		a = append(a, "--udpconnect")
	}
	if s.Window > 0 {
		a = append(a, "--window", strconv.Itoa(s.Window))
	}
	return a
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

func sizeName(n int) string {
	switch {
	case n >= mib:
		return fmt.Sprintf("%dMB", n/mib)
	case n >= kib:
		return fmt.Sprintf("%dKB", n/kib)
	}
	return fmt.Sprintf("%dB", n)
}

func oneway(proto string, size, clients int, suffix string) Scenario {
	s := Scenario{Name: fmt.Sprintf("%s-%s%s", proto, sizeName(size), suffix), Mode: "oneway", Proto: proto,
		Size: size, Clients: clients, RecvMode: "sync"}
	if proto == "udp" {
		s.RcvBuf = udpOnewayRcvBuf
	}
	return s
}

// udpOnewayRcvBuf is the receive buffer of both servers in the UDP one-way
// rows. The clients send faster than either server reads; at the OS
// default (~208 KiB on Linux) most datagrams are dropped for a full
// buffer and the rate measured is how the scheduler times the server's
// wake-ups (pairs of one build spread 0.85–2.57×), not its receive path.
// With 4 MiB on both the row compares the two receive paths
// (docs/perf/udp.md).
const udpOnewayRcvBuf = 4 << 20

// Full is the scenario list of NewLife NetLoadTest's run-matrix.ps1.
func Full() []Scenario {
	var l []Scenario
	for _, n := range []int{32, kib, 64 * kib, mib} {
		l = append(l, oneway("tcp", n, 8, ""))
	}
	for _, n := range []int{kib, 64 * kib} {
		s := oneway("tcp", n, 8, "-f24")
		s.Frame = 24
		l = append(l, s)
	}
	for _, n := range []int{32, 256, kib, 4 * kib, 16 * kib, 64 * kib} {
		l = append(l, oneway("udp", n, 4, ""))
	}
	for _, n := range []int{kib, 64 * kib} {
		s := oneway("udp", n, 4, "-f24")
		s.Frame = 24
		l = append(l, s)
	}
	for _, c := range []int{1, 4, 16, 32, 64} {
		l = append(l, oneway("tcp", kib, c, fmt.Sprintf("-c%d", c)))
	}
	for _, c := range []int{1, 4, 16, 32} {
		l = append(l, oneway("tcp", 64*kib, c, fmt.Sprintf("-c%d", c)))
	}
	for _, c := range []int{1, 2, 8, 16, 32, 64} {
		l = append(l, oneway("udp", kib, c, fmt.Sprintf("-c%d", c)))
	}
	for _, c := range []int{1, 2, 8, 16, 32} {
		l = append(l, oneway("udp", 64*kib, c, fmt.Sprintf("-c%d", c)))
	}
	l = append(l, oneway("udp", 16*kib, 8, "-c8"))
	for _, n := range []int{kib, 64 * kib} {
		s := oneway("udp", n, 4, "-conn")
		s.UDPConnect = true
		l = append(l, s)
	}
	for _, n := range []int{kib, 64 * kib} {
		for _, r := range []string{"sync", "async", "event"} {
			l = append(l, Scenario{Name: fmt.Sprintf("tcp-%s-pipe-%s", sizeName(n), r), Mode: "pipeline", Proto: "tcp", Size: n, Clients: 8, RecvMode: r})
		}
	}
	for _, n := range []int{32, kib, 64 * kib, mib} {
		l = append(l, roundtrip("tcp", n, 4, "sync"))
	}
	for _, n := range []int{kib, 64 * kib} {
		l = append(l, roundtrip("tcp", n, 64, "sync"))
		for _, r := range []string{"async", "event"} {
			l = append(l, roundtrip("tcp", n, 4, r), roundtrip("tcp", n, 64, r))
		}
	}
	for _, n := range []int{32, kib, 64 * kib} {
		l = append(l, roundtrip("udp", n, 1, "sync"))
	}
	l = append(l, roundtrip("udp", kib, 1, "event"))
	// Codec echo: 32-byte frames, serial and windowed.
	for _, c := range []string{"srmp", "lengthfield"} {
		for _, conns := range []int{1, 16, 64} {
			s := roundtrip("tcp", 32, conns, "sync")
			s.Name, s.Codec = fmt.Sprintf("tcp-32B-%s-serial-%dC", c, conns), c
			w := Scenario{Name: fmt.Sprintf("tcp-32B-%s-window-%dC", c, conns), Mode: "pipeline", Proto: "tcp", Size: 32,
				Clients: conns, RecvMode: "sync", Codec: c, Window: 255}
			l = append(l, s, w)
		}
	}
	l = append(l, udpCodecScenarios()...)
	return append(l, rpcScenarios()...)
}

// udpCodecScenarios are the UDP codec echo rows: 32-byte SRMP requests,
// one frame per datagram and one in flight per client, for 1, 4 and 16
// clients. Both runs of a row send with the raw UDP client (`lifenet
// load` picks it for UDP codec runs whatever --impl), so the ratio
// compares the servers: lifenet's codec server against the baseline's datagram
// loop.
func udpCodecScenarios() []Scenario {
	var l []Scenario
	for _, conns := range []int{1, 4, 16} {
		s := roundtrip("udp", 32, conns, "sync")
		s.Name, s.Codec = fmt.Sprintf("udp-32B-srmp-serial-%dC", conns), "srmp"
		l = append(l, s)
	}
	return l
}

func roundtrip(proto string, size, clients int, recv string) Scenario {
	return Scenario{Name: fmt.Sprintf("%s-%s-rt-%s-%dC", proto, sizeName(size), recv, clients), Mode: "roundtrip",
		Proto: proto, Size: size, Clients: clients, RecvMode: recv}
}

// QuickRounds is how many alternating pairs --quick runs of each
// scenario: with three, one slow run moves the median ratio little and
// the spread shows it.
const QuickRounds = 3

// Quick is a short list, the headline scenario of each kind, that runs in
// about three minutes with QuickRounds pairs each: TCP and UDP one-way,
// the TCP echo pipeline and round trip, the codec echo serial and
// windowed, and the RPC rows at one caller and at 100 connections.
func Quick() []Scenario {
	pick := map[string]bool{
		"tcp-1KB": true, "udp-1KB": true, "tcp-1KB-pipe-sync": true, "tcp-1KB-rt-sync-4C": true,
		"tcp-32B-srmp-window-16C": true, "tcp-32B-lengthfield-serial-16C": true,
		"rpc-noarg-c1": true, "rpc-noarg-100conn": true,
	}
	var l []Scenario
	for _, s := range Full() {
		if pick[s.Name] {
			l = append(l, s)
		}
	}
	return l
}
