package rpcbench

import (
	"bytes"
	"context"
	"fmt"
	netrpc "net/rpc"
	"strings"

	"github.com/lifenet/lifenet/rpc"
)

// Shapes are the call shapes of NewLife's RpcBenchmarks.
var Shapes = []string{"noarg", "echo16", "echo2000", "string16", "string2000", "multi"}

// LoadShapes are the shapes rpcload takes: Shapes and "latency"
// (Bench/Latency, a call that sleeps: lifenet and net/rpc only).
var LoadShapes = append(Shapes[:len(Shapes):len(Shapes)], "latency")

// Shape is one call shape's arguments, for every implementation.
type Shape struct {
	Name   string
	Action string // lifenet action ("Bench/NoArg"; net/rpc: "Bench.NoArg")
	Bytes  []byte // EchoPacket payload
	Str    string // EchoString input
}

// ShapeOf returns the call shape name (one of Shapes): EchoPacket sends
// bytes 0, 1, 2, …, EchoString a string of 'x'.
func ShapeOf(name string) Shape {
	switch name {
	case "echo16", "echo2000":
		n := 16
		if name == "echo2000" {
			n = 2000
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)
		}
		return Shape{Name: name, Action: "Bench/EchoPacket", Bytes: b}
	case "string16", "string2000":
		n := 16
		if name == "string2000" {
			n = 2000
		}
		return Shape{Name: name, Action: "Bench/EchoString", Str: strings.Repeat("x", n)}
	case "multi":
		return Shape{Name: name, Action: "Bench/MultiArgs"}
	case "latency":
		return Shape{Name: name, Action: "Bench/Latency"}
	}
	return Shape{Name: "noarg", Action: "Bench/NoArg"}
}

// LatencyShape is the "latency" shape's arguments: 1 ms, and 20 ms for 2 %
// of the calls (a latency whose 99th percentile is the slow calls').
var LatencyShape = LatencyArgs{Min: 1000, Max: 1000, Slow: 20000, SlowPct: 2}

var multiArgs = MultiArgs{A: 42, B: 123456, C: "test", D: true, E: 3.14}

// Args is the shape's argument as lifenet sends it: the payload for
// EchoPacket, StringArgs for EchoString, MultiArgs, or nil for NoArg.
func (sh Shape) Args() any {
	switch {
	case sh.Bytes != nil:
		return sh.Bytes
	case sh.Str != "":
		return StringArgs{Input: sh.Str}
	case sh.Action == "Bench/MultiArgs":
		return multiArgs
	case sh.Action == "Bench/Latency":
		return LatencyShape
	}
	return nil
}

// Caller makes one call and checks its result; each calling goroutine has
// its own (results are decoded into its buffers). Arguments are boxed into
// their interface once, when the caller is made: converting a slice or a
// struct to any on every call would allocate, which is the caller's cost
// and not the library's (both libraries' callers do the same).
type Caller func(ctx context.Context) error

// LifenetCaller returns a Caller that calls sh's action on cl.
func LifenetCaller(cl *rpc.Client, sh Shape) Caller {
	switch {
	case sh.Bytes != nil:
		var args any = sh.Bytes
		var out []byte
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.Action, args, &out); err != nil {
				return err
			}
			return CheckBytes(out, sh.Bytes)
		}
	case sh.Str != "":
		var args any = StringArgs{Input: sh.Str}
		var out string
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.Action, args, &out); err != nil {
				return err
			}
			return CheckString(out, sh.Str)
		}
	case sh.Action == "Bench/Latency":
		var args any = LatencyShape
		var r int32
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.Action, args, &r); err != nil {
				return err
			}
			return CheckInt(r)
		}
	case sh.Action == "Bench/MultiArgs":
		var args any = multiArgs
		var r int32
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.Action, args, &r); err != nil {
				return err
			}
			return CheckInt(r)
		}
	}
	var r int32
	return func(ctx context.Context) error {
		if err := cl.Invoke(ctx, sh.Action, nil, &r); err != nil {
			return err
		}
		return CheckInt(r)
	}
}

// NetRPCCaller returns a Caller that calls sh's method (Bench.NoArg, …) on
// a net/rpc client.
func NetRPCCaller(cl *netrpc.Client, sh Shape) Caller {
	method := strings.Replace(sh.Action, "/", ".", 1)
	switch {
	case sh.Bytes != nil:
		var args any = sh.Bytes
		var out []byte
		return func(context.Context) error {
			out = out[:0]
			if err := cl.Call(method, args, &out); err != nil {
				return err
			}
			return CheckBytes(out, sh.Bytes)
		}
	case sh.Str != "":
		var args any = sh.Str
		var out string
		return func(context.Context) error {
			if err := cl.Call(method, args, &out); err != nil {
				return err
			}
			return CheckString(out, sh.Str)
		}
	case method == "Bench.Latency":
		var args any = LatencyShape
		var r int32
		return func(context.Context) error {
			if err := cl.Call(method, args, &r); err != nil {
				return err
			}
			return CheckInt(r)
		}
	case method == "Bench.MultiArgs":
		var args any = multiArgs
		var r int32
		return func(context.Context) error {
			if err := cl.Call(method, args, &r); err != nil {
				return err
			}
			return CheckInt(r)
		}
	}
	var r int32
	return func(context.Context) error {
		if err := cl.Call(method, struct{}{}, &r); err != nil {
			return err
		}
		return CheckInt(r)
	}
}

// CheckBytes reports an echo that differs from what was sent.
func CheckBytes(got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("echo returned %d bytes that differ from the %d sent", len(got), len(want))
	}
	return nil
}

// CheckString reports an echo that differs from what was sent.
func CheckString(got, want string) error {
	if got != want {
		return fmt.Errorf("echo returned a %d-character string that differs from the %d sent", len(got), len(want))
	}
	return nil
}

// CheckInt reports a result other than NoArg's 42.
func CheckInt(r int32) error {
	if r != 42 {
		return fmt.Errorf("result %d, want 42", r)
	}
	return nil
}
