package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// classify is how an attempt that ended with err after latency is
// reported to the balancer ([rpc.Balancer.Done]):
//
//   - the attempt's ctx canceled (the caller gave up, or another attempt
//     of a [Race] won): Canceled;
//   - a timeout: a plain sample of the time waited (slow is not down);
//   - the endpoint failed ([unavailable]): Unavailable;
//   - success, an error reply, or anything else: a plain sample.
func classify(ctx context.Context, err error, latency time.Duration) rpc.PickResult {
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return rpc.PickResult{Canceled: true}
	case errors.Is(err, rpc.ErrTimeout):
	case unavailable(err):
		return rpc.PickResult{Unavailable: true, Latency: latency}
	}
	return rpc.PickResult{Latency: latency}
}

// unavailable reports an error of the endpoint itself, not of the call: a
// connection refused, reset or closed ([rpc.ErrConnClosed], which
// [rpc.ErrNotSent] wraps), no server reachable ([rpc.ErrNoServer]), or a
// server shutting down ([rpc.ErrShutdown], a 503 reply). Other error
// replies, [rpc.ErrBusy] among them (a busy connection, not a down server),
// are not.
func unavailable(err error) bool {
	var ae *rpc.APIError
	if errors.As(err, &ae) {
		return errors.Is(ae, rpc.ErrShutdown)
	}
	return errors.Is(err, rpc.ErrConnClosed) ||
		errors.Is(err, rpc.ErrNoServer) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}
