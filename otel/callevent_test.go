package otel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// TestServerCallDoneMatchesTheInterceptor: the same calls, measured once
// by ServerInterceptor and once by ServerCallDone (with the SDK's
// instruments and WithCallMetrics), give the same server metrics: names,
// attribute sets, counts, size buckets and sums.
func TestServerCallDoneMatchesTheInterceptor(t *testing.T) {
	calls := func(cfg rpc.Config) {
		_, addr := startServer(t, cfg, func(s *rpc.Server) {
			must(t, rpc.Handle(s, "Echo/Say", func(_ context.Context, in string) (string, error) { return in, nil }))
			must(t, rpc.Handle(s, "Echo/Deny", func(context.Context, struct{}) (int, error) {
				return 0, &rpc.APIError{Code: rpc.CodeForbidden, Message: "no"}
			}))
			must(t, rpc.Handle(s, "Echo/Gone", func(context.Context, struct{}) (int, error) {
				return 0, &rpc.APIError{Code: rpc.CodeNotFound, Message: "no such order"} // a 404 of a known action
			}))
		})
		cl := dial(t, addr, rpc.ClientConfig{Log: quietLog()})
		ctx := testCtx(t)
		var out string
		for i := range 5 {
			must(t, cl.Invoke(ctx, "Echo/Say", fmt.Sprint("hello", i*100), &out))
		}
		cl.Invoke(ctx, "Echo/Deny", nil, nil)
		cl.Invoke(ctx, "Echo/Gone", nil, nil)
		cl.Invoke(ctx, "No/Such", nil, nil)
	}
	names := []string{"rpc.server.call.duration", "rpc.server.request.size", "rpc.server.response.size"}
	for _, fast := range []bool{false, true} {
		mp, ir := meters(t)
		mp2, hr := meters(t)
		opts, hookOpts := []otel.Option{otel.WithMeterProvider(mp), otel.WithoutTraces()}, []otel.Option{otel.WithMeterProvider(mp2)}
		if fast {
			cm, cmr := callMetrics(t)
			cm2, cmr2 := callMetrics(t)
			opts, hookOpts = append(opts, otel.WithCallMetrics(cm)), append(hookOpts, otel.WithCallMetrics(cm2))
			ir, hr = cmr, cmr2
		}
		calls(rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(opts...)}})
		// OnCallDone runs once a call's reply has gone out, so a client
		// can have its reply before the hook has counted the call: wait
		// for all eight.
		hook, seen := otel.ServerCallDone(hookOpts...), atomic.Int32{}
		calls(rpc.Config{OnCallDone: func(ev rpc.CallEvent) { hook(ev); seen.Add(1) }})
		testwait.For(t, 10*time.Second, "the hook's eight calls", func() bool { return seen.Load() == 8 })
		want, got := collect(t, ir), collect(t, hr)
		for _, name := range names {
			w, g := histShape(want[name]), histShape(got[name])
			if len(w) == 0 || fmt.Sprint(w) != fmt.Sprint(g) {
				t.Errorf("CallMetrics %v, %s:\n interceptor    %q\n ServerCallDone %q", fast, name, w, g)
			}
		}
	}
}
