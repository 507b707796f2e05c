package rpc_test

import (
	"context"
	"errors"
	"iter"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// isTimeout reports whether err is a timeout by every test a caller may
// use: rpc.ErrTimeout, context.DeadlineExceeded, net.Error's Timeout, and
// rpc.CodeOf.
func checkTimeout(t *testing.T, what string, err error) {
	t.Helper()
	var ne net.Error
	switch {
	case !errors.Is(err, rpc.ErrTimeout):
		t.Errorf("%s: %v does not match rpc.ErrTimeout", what, err)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%s: %v does not match context.DeadlineExceeded", what, err)
	case !errors.Is(err, codec.ErrTimeout):
		t.Errorf("%s: %v does not match codec.ErrTimeout", what, err)
	case !errors.As(err, &ne) || !ne.Timeout():
		t.Errorf("%s: %v is not a net.Error whose Timeout is true", what, err)
	case rpc.CodeOf(err) != rpc.CodeTimeout:
		t.Errorf("%s: CodeOf(%v) = %d, want CodeTimeout", what, err, rpc.CodeOf(err))
	}
}

// Every timeout of a call has one identity, whether the call's context or
// the client's Timeout ended it, for calls and streams, over SRMP and HTTP.
func TestTimeoutsHaveOneIdentity(t *testing.T) {
	g := newGate(t, 16)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Op", func(ctx context.Context, _ struct{}) (int, error) { return 0, g.wait(ctx) }))
		must(t, rpc.HandleStream(srv, "Slow/Stream", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				if yield(1, nil) {
					g.wait(ctx)
				}
			}
		}))
	})
	const short = 50 * time.Millisecond
	for _, server := range []string{addr, "http://" + addr} {
		quick := dialClient(t, server, rpc.ClientConfig{Timeout: short})
		patient := dialClient(t, server, rpc.ClientConfig{Timeout: testTimeout})

		_, err := rpc.Call[int](context.Background(), quick, "Slow/Op", nil)
		checkTimeout(t, server+": ClientConfig.Timeout", err)

		ctx, cancel := context.WithTimeout(context.Background(), short)
		_, err = rpc.Call[int](ctx, patient, "Slow/Op", nil)
		cancel()
		checkTimeout(t, server+": the context's deadline", err)
	}

	streamErr := func(ctx context.Context, cl *rpc.Client) error {
		for _, err := range rpc.Stream[int](ctx, cl, "Slow/Stream", nil) {
			if err != nil {
				return err
			}
		}
		return errors.New("the stream ended")
	}
	quick := dialClient(t, addr, rpc.ClientConfig{Timeout: short})
	checkTimeout(t, "a stream past ClientConfig.Timeout", streamErr(context.Background(), quick))
	patient := dialClient(t, addr, rpc.ClientConfig{Timeout: testTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), short)
	defer cancel()
	checkTimeout(t, "a stream past its context's deadline", streamErr(ctx, patient))

	// A cancelled call is no timeout.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := rpc.Call[int](ctx, patient, "Slow/Op", nil); !errors.Is(err, context.Canceled) || errors.Is(err, rpc.ErrTimeout) {
		t.Errorf("a cancelled call: %v, want context.Canceled and no timeout", err)
	}
}
