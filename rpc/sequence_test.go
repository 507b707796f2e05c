package rpc_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// A reply carrying the call's sequence number but another action's name
// is an earlier call's late reply on a reused number: the client drops it
// and takes the reply that names its action.
func TestClientDropsAReplyForAnotherAction(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req := make([]byte, 31) // R1: Bench/Add with {"a":1,"b":2}
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		c.Write(unhex(t, "81 01 12 00 | 0B 42 65 6E 63 68 2F 4E 6F 41 72 67 | 02 00 00 00 | 34 32")) // Bench/NoArg's 42, seq 1
		c.Write(unhex(t, "81 01 0F 00 | 09 42 65 6E 63 68 2F 41 64 64 | 01 00 00 00 | 33"))          // R2
		io.Copy(io.Discard, c)
	}()
	cl, err := rpc.Dial(context.Background(), ln.Addr().String(), rpc.ClientConfig{})
	must(t, err)
	defer cl.Close()
	sum, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{1, 2})
	if err != nil || sum != 3 {
		t.Fatalf("Bench/Add = %d, %v; want 3 (the NoArg reply on the same number dropped)", sum, err)
	}
}
