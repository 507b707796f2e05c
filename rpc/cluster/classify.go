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
//   - a timeout: a plain sample of the time waited (slow is not down: the
//     client's own health state shields an endpoint that stops replying,
//     see observe);
//   - the endpoint failed ([unavailable]): Unavailable; but a draining
//     server's 503 when the client shields those itself (healthOn: until
//     its Api/Health says it serves, which the balancer's probe, a real
//     call, could not tell): a plain sample, as an error reply;
//   - success, an error reply, or anything else: a plain sample.
func classify(ctx context.Context, err error, latency time.Duration, healthOn bool) rpc.PickResult {
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return rpc.PickResult{Canceled: true}
	case errors.Is(err, rpc.ErrTimeout):
	case healthOn && refusing(err):
	case unavailable(err):
		return rpc.PickResult{Unavailable: true, Latency: latency}
	}
	return rpc.PickResult{Latency: latency}
}

// unavailable reports an error of the endpoint itself, not of the call: a
// connection refused, reset or closed ([rpc.ErrConnClosed], which
// [rpc.ErrNotSent] wraps), no server reachable ([rpc.ErrNoServer]), or a
// server draining ([rpc.ErrShutdown] or [rpc.ErrNotServing], a 503
// reply). Other error replies, [rpc.ErrBusy] among them (a busy
// connection, not a down server), are not.
func unavailable(err error) bool {
	var ae *rpc.APIError
	if errors.As(err, &ae) {
		return refusing(ae)
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
