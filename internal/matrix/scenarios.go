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
	Codec      string `json:"codec,omitempty"` // srmp or lengthfield: lifenet runs its codec, raw rawnet's per-message loop and client
	Window     int    `json:"window,omitempty"`
}

// loadArgs returns the `lifenet load` flags shared by server and client.
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
	return Scenario{Name: fmt.Sprintf("%s-%s%s", proto, sizeName(size), suffix), Mode: "oneway", Proto: proto,
		Size: size, Clients: clients, RecvMode: "sync"}
}

// Full is the scenario list of run-matrix.ps1 (spec §C.5).
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
	// Codec echo (seed 001): 32-byte frames, serial and windowed.
	for _, c := range []string{"srmp", "lengthfield"} {
		for _, conns := range []int{1, 16, 64} {
			s := roundtrip("tcp", 32, conns, "sync")
			s.Name, s.Codec = fmt.Sprintf("tcp-32B-%s-serial-%dC", c, conns), c
			w := Scenario{Name: fmt.Sprintf("tcp-32B-%s-window-%dC", c, conns), Mode: "pipeline", Proto: "tcp", Size: 32,
				Clients: conns, RecvMode: "sync", Codec: c, Window: 255}
			l = append(l, s, w)
		}
	}
	return l
}

func roundtrip(proto string, size, clients int, recv string) Scenario {
	return Scenario{Name: fmt.Sprintf("%s-%s-rt-%s-%dC", proto, sizeName(size), recv, clients), Mode: "roundtrip",
		Proto: proto, Size: size, Clients: clients, RecvMode: recv}
}

// Quick is a short list, one or two of each kind, that runs in well under
// three minutes with both implementations.
func Quick() []Scenario {
	pick := map[string]bool{
		"tcp-32B": true, "tcp-1KB": true, "tcp-64KB": true, "tcp-1KB-c1": true, "tcp-1KB-c16": true,
		"udp-1KB": true, "udp-1KB-conn": true, "tcp-1KB-pipe-sync": true, "tcp-1KB-pipe-event": true,
		"tcp-1KB-rt-sync-4C": true, "tcp-1KB-rt-sync-64C": true, "udp-1KB-rt-sync-1C": true,
		"tcp-32B-srmp-window-16C": true, "tcp-32B-lengthfield-serial-16C": true,
	}
	var l []Scenario
	for _, s := range Full() {
		if pick[s.Name] {
			l = append(l, s)
		}
	}
	return l
}
