package rpctool

import (
	"bytes"
	"context"
	"fmt"
	netrpc "net/rpc"
	"strings"

	"github.com/lifenet/lifenet/rpc"
)

// The call shapes of NewLife's RpcBenchmarks.
var callShapes = []string{"noarg", "echo16", "echo2000", "string16", "string2000", "multi"}

// shape is one call shape's arguments.
type shape struct {
	action string // lifenet action (net/rpc: with "." for "/")
	bytes  []byte // EchoPacket payload
	str    string // EchoString input
}

func shapeOf(name string) shape {
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
		return shape{action: "Bench/EchoPacket", bytes: b}
	case "string16", "string2000":
		n := 16
		if name == "string2000" {
			n = 2000
		}
		return shape{action: "Bench/EchoString", str: strings.Repeat("x", n)}
	case "multi":
		return shape{action: "Bench/MultiArgs"}
	}
	return shape{action: "Bench/NoArg"}
}

var multiArgs = MultiArgs{A: 42, B: 123456, C: "test", D: true, E: 3.14}

// caller makes one call and checks its result; each calling goroutine has
// its own (results are decoded into its buffers).
type caller func(ctx context.Context) error

func lifenetCaller(cl *rpc.Client, sh shape) caller {
	switch {
	case sh.bytes != nil:
		var out []byte
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.action, sh.bytes, &out); err != nil {
				return err
			}
			return checkBytes(out, sh.bytes)
		}
	case sh.str != "":
		args := StringArgs{Input: sh.str}
		var out string
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.action, args, &out); err != nil {
				return err
			}
			return checkString(out, sh.str)
		}
	case sh.action == "Bench/MultiArgs":
		var r int32
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctx, sh.action, multiArgs, &r); err != nil {
				return err
			}
			return checkInt(r)
		}
	}
	var r int32
	return func(ctx context.Context) error {
		if err := cl.Invoke(ctx, sh.action, nil, &r); err != nil {
			return err
		}
		return checkInt(r)
	}
}

func netrpcCaller(cl *netrpc.Client, sh shape) caller {
	method := strings.Replace(sh.action, "/", ".", 1)
	switch {
	case sh.bytes != nil:
		var out []byte
		return func(context.Context) error {
			out = out[:0]
			if err := cl.Call(method, sh.bytes, &out); err != nil {
				return err
			}
			return checkBytes(out, sh.bytes)
		}
	case sh.str != "":
		var out string
		return func(context.Context) error {
			if err := cl.Call(method, sh.str, &out); err != nil {
				return err
			}
			return checkString(out, sh.str)
		}
	case method == "Bench.MultiArgs":
		var r int32
		return func(context.Context) error {
			if err := cl.Call(method, multiArgs, &r); err != nil {
				return err
			}
			return checkInt(r)
		}
	}
	var r int32
	return func(context.Context) error {
		if err := cl.Call(method, struct{}{}, &r); err != nil {
			return err
		}
		return checkInt(r)
	}
}

func checkBytes(got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("echo returned %d bytes that differ from the %d sent", len(got), len(want))
	}
	return nil
}

func checkString(got, want string) error {
	if got != want {
		return fmt.Errorf("echo returned a %d-character string that differs from the %d sent", len(got), len(want))
	}
	return nil
}

func checkInt(r int32) error {
	if r != 42 {
		return fmt.Errorf("result %d, want 42", r)
	}
	return nil
}
