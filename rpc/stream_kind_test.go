package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// Calling a stream the wrong way fails at once with an error that says
// which way is right: Stream on an action that does not stream, Call on
// one that does (over SRMP, WebSocket and HTTP); the connection goes on.
func TestStreamCalledTheWrongWayFailsAtOnce(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.HandleStream(srv, "Bench/Count", countTo))
	})
	ctx := context.Background()
	for _, server := range []string{addr, "ws://" + addr} {
		cl := dialClient(t, server, rpc.ClientConfig{Timeout: testTimeout})
		start := time.Now()
		n, last := 0, error(nil)
		for _, err := range rpc.Stream[int32](ctx, cl, "Bench/NoArg", nil) {
			if err != nil {
				last = err
				break
			}
			n++
		}
		if n != 0 || !errors.Is(last, rpc.ErrUnaryAction) || rpc.CodeOf(last) != rpc.CodeBadRequest {
			t.Errorf("%s: Stream on a call: %d items, then %v; want ErrUnaryAction at once", server, n, last)
		}
		if d := time.Since(start); d > testTimeout/2 {
			t.Errorf("%s: Stream on a call took %v", server, d)
		}

		if v, err := rpc.Call[int](ctx, cl, "Bench/Count", 3); !errors.Is(err, rpc.ErrStreamAction) {
			t.Errorf("%s: Call on a stream: %d, %v; want ErrStreamAction", server, v, err)
		}
		if v, err := rpc.Call[int32](ctx, cl, "Bench/NoArg", nil); err != nil || v != 42 {
			t.Errorf("%s: a call after: %d, %v", server, v, err)
		}
		var got []int
		for v, err := range rpc.Stream[int](ctx, cl, "Bench/Count", 3) {
			must(t, err)
			got = append(got, v)
		}
		if len(got) != 3 {
			t.Errorf("%s: a stream after: %v", server, got)
		}
	}
	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{})
	if v, err := rpc.Call[int](ctx, cl, "Bench/Count", map[string]int{"n": 3}); !errors.Is(err, rpc.ErrStreamAction) {
		t.Errorf("HTTP: Call on a stream: %d, %v; want ErrStreamAction", v, err)
	}
}
