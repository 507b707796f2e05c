// Package rpcbench is NewLife.Remoting's RPC benchmark as the lifenet CLI
// and the bench/ module share it: the benchmark controller (Bench/NoArg,
// EchoString, EchoPacket, MultiArgs, Add, ServerStats) for lifenet and for
// Go's net/rpc, the call shapes and their result checks, and the measuring
// loop (Measure) that `lifenet rpcload` and bench's grpcload run. It sits
// in the module's internal/ rather than under cmd/lifenet because bench/
// imports it.
package rpcbench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/rpc"
)

// MultiArgs are the arguments of Bench/MultiArgs (NewLife's
// MultiArgs(Int32 a, Int64 b, String c, Boolean d, Double e)).
type MultiArgs struct {
	A int32   `json:"a"`
	B int64   `json:"b"`
	C string  `json:"c"`
	D bool    `json:"d"`
	E float64 `json:"e"`
}

// AddArgs are the arguments of Bench/Add.
type AddArgs struct {
	A int32 `json:"a"`
	B int32 `json:"b"`
}

// StringArgs are the arguments of Bench/EchoString (NewLife sends
// new { input = … }).
type StringArgs struct {
	Input string `json:"input"`
}

// ProcStats are what Bench/ServerStats reports: the server process's CPU
// time and bytes allocated so far, so a load client can work out the
// server's cost per call.
type ProcStats struct {
	CPU        float64 `json:"cpu"`        // seconds of user+system CPU
	TotalAlloc uint64  `json:"totalAlloc"` // bytes allocated
}

// ReadProcStats reads this process's ProcStats.
func ReadProcStats() ProcStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ProcStats{CPU: cpustat.Seconds(), TotalAlloc: ms.TotalAlloc}
}

// RegisterBench registers NewLife's benchmark controller (BenchController)
// plus Bench/Add and Bench/ServerStats on srv, with the typed handlers;
// inline runs them on the reading goroutines (rpc.WithInline: they never block).
func RegisterBench(srv *rpc.Server, inline bool) error {
	var o []rpc.HandleOption
	if inline {
		o = append(o, rpc.WithInline())
	}
	for _, err := range []error{
		rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }, o...),
		rpc.Handle(srv, "Bench/EchoString", func(_ context.Context, s string) (string, error) { return s, nil }, o...),
		rpc.Handle(srv, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }, o...),
		rpc.Handle(srv, "Bench/MultiArgs", func(_ context.Context, a MultiArgs) (int32, error) { return a.A, nil }, o...),
		rpc.Handle(srv, "Bench/Add", func(_ context.Context, a AddArgs) (int32, error) { return a.A + a.B, nil }, o...),
		rpc.Handle(srv, "Bench/Latency", benchLatency), // blocks: never inline
		rpc.Handle(srv, "Bench/ServerStats", func(context.Context, struct{}) (ProcStats, error) { return ReadProcStats(), nil }),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// LatencyArgs are the arguments of Bench/Latency: it sleeps a time drawn
// uniformly from [Min, Max] microseconds or, for SlowPct percent of the
// calls, Slow microseconds.
type LatencyArgs struct {
	Min     int     `json:"min"`
	Max     int     `json:"max"`
	Slow    int     `json:"slow"`
	SlowPct float64 `json:"slowPct"`
}

// benchLatency is Bench/Latency: a call whose time is the server's, so that a
// server-side latency histogram and a client's agree (the Prometheus test
// compares them). It returns 42, as NoArg does.
func benchLatency(_ context.Context, a LatencyArgs) (int32, error) {
	const most = 10_000_000 // 10 s
	if a.Min < 0 || a.Max < a.Min || a.Max > most || a.Slow < 0 || a.Slow > most || a.SlowPct < 0 || a.SlowPct > 100 {
		return 0, &rpc.APIError{Code: rpc.CodeBadRequest, Message: "Bench/Latency: want 0 <= min <= max <= 10 s, slow <= 10 s, 0 <= slowPct <= 100"}
	}
	d := a.Min
	switch {
	case a.SlowPct > 0 && rand.Float64()*100 < a.SlowPct:
		d = a.Slow
	case a.Max > a.Min:
		d += rand.IntN(a.Max - a.Min + 1)
	}
	time.Sleep(time.Duration(d) * time.Microsecond)
	return 42, nil
}

// NetRPCBench is the same controller for Go's net/rpc (the baseline).
type NetRPCBench struct{}

// NoArg returns 42.
func (NetRPCBench) NoArg(_ struct{}, r *int32) error { *r = 42; return nil }

// EchoString returns its argument.
func (NetRPCBench) EchoString(s string, r *string) error { *r = s; return nil }

// EchoPacket returns its argument.
func (NetRPCBench) EchoPacket(b []byte, r *[]byte) error { *r = b; return nil }

// MultiArgs returns a.A.
func (NetRPCBench) MultiArgs(a MultiArgs, r *int32) error { *r = a.A; return nil }

// Latency sleeps as Bench/Latency does.
func (NetRPCBench) Latency(a LatencyArgs, r *int32) error {
	n, err := benchLatency(context.Background(), a)
	*r = n
	return err
}

// ServerStats reports the process's CPU and allocation.
func (NetRPCBench) ServerStats(_ struct{}, r *ProcStats) error { *r = ReadProcStats(); return nil }
