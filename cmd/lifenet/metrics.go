package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/rpctool"
	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// serveHooks add --metrics to `lifenet serve`: the otel module's server
// interceptor and observers, exported in Prometheus's text format at
// /metrics, and a JSON /status page, on a side port (sidelisten.go) that
// holds at most --metrics-conns connections.
func serveHooks() rpctool.ServeHooks {
	m := &metricsServer{}
	return rpctool.ServeHooks{
		Flags: func(fs *flag.FlagSet) {
			m.fs = fs
			fs.StringVar(&m.addr, "metrics", "", "lifenet: serve /metrics (Prometheus) and /status (JSON) on this HOST:PORT (port 0 picks a free one), GET and HEAD only")
			fs.IntVar(&m.conns, "metrics-conns", defaultSideConns, "with --metrics: the most connections the metrics port holds; past it the keep-alive connection idle longest makes room, "+
				"or the new one gets a 503 at once. At most a quarter of the file limit (ulimit -n; the default is lowered to it): the RPC port keeps the rest")
			fs.Float64Var(&m.traces, "traces", 0, "lifenet, with --metrics: a server span per call, sampled parent-based at this ratio (0 to 1; 0: no spans), written where --traces-out says")
		},
		Check:   m.check,
		Config:  m.config,
		Started: m.started,
		Tracer:  func() *sdktrace.TracerProvider { return m.tp },
	}
}

type metricsServer struct {
	fs     *flag.FlagSet
	addr   string
	conns  int     // --metrics-conns; check lowers the default to the file limit's quarter
	traces float64 // --traces: the sampling ratio; 0 no spans
	reg    *prometheus.Registry
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider // --traces; nil without
	status *statusRecorder
	// received is the server's time per answered call from the request
	// to its reply's write (servertime.go), beside the handler's time in
	// calls.
	received *receivedToWritten
}

// check validates --metrics and --traces.
func (m *metricsServer) check() error {
	switch {
	case !(m.traces >= 0 && m.traces <= 1): // NaN too
		return fmt.Errorf("--traces %v: want a ratio from 0 to 1", m.traces)
	case m.traces > 0 && m.addr == "":
		return errors.New("--traces needs --metrics")
	case m.addr == "" && m.set("metrics-conns"):
		return errors.New("--metrics-conns needs --metrics")
	case m.addr == "":
		return nil
	}
	if _, port, err := net.SplitHostPort(m.addr); err != nil {
		return fmt.Errorf("--metrics %q: want HOST:PORT", m.addr)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--metrics %q: want HOST:PORT with a port from 0 to 65535", m.addr)
	}
	if err := cliflag.Between("metrics-conns", m.conns, 1, maxSideConns); err != nil {
		return err
	}
	limit := fileLimit()
	if hi := sideConnsLimit(limit); m.conns > hi {
		if m.set("metrics-conns") {
			return fmt.Errorf("--metrics-conns %d: want between 1 and %d, a quarter of the file limit (%d): the RPC port keeps the rest", m.conns, hi, limit)
		}
		m.conns = hi
	}
	return nil
}

// set reports whether the command line set the flag name.
func (m *metricsServer) set(name string) bool {
	set := false
	if m.fs != nil {
		m.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	}
	return set
}

func (m *metricsServer) config(cfg *rpc.Config) error {
	if m.addr == "" {
		return nil
	}
	m.reg = prometheus.NewRegistry()
	calls := lnotel.NewCallMetrics() // the call histograms at a few hundred instructions a call, not the SDK's thousands
	m.received = newReceivedToWritten()
	exp, err := otelprom.New(otelprom.WithRegisterer(m.reg), otelprom.WithProducer(calls), otelprom.WithProducer(m.received))
	if err != nil {
		return err
	}
	m.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m.status = newStatusRecorder(calls, m.received)
	// The call metrics from the server's OnCallDone hook, not an
	// interceptor: a third of the cost (docs/perf/observability.md).
	done := lnotel.ServerCallDone(lnotel.WithMeterProvider(m.mp), lnotel.WithCallMetrics(calls))
	cfg.OnCallDone = func(ev rpc.CallEvent) {
		done(ev)
		m.received.record(ev)
	}
	if m.traces > 0 {
		// The interceptor samples (parent-based at the ratio) before the
		// tracer sees a call; the provider's default sampler,
		// ParentBased(AlwaysSample), keeps the calls it is handed.
		m.tp = sdktrace.NewTracerProvider()
		cfg.Interceptors = append(cfg.Interceptors,
			lnotel.ServerInterceptor(lnotel.WithoutMetrics(), lnotel.WithTracerProvider(m.tp), lnotel.WithSampling(m.traces)))
	}
	return nil
}

func (m *metricsServer) started(ctx context.Context, srv *rpc.Server, stdout io.Writer) (func(), error) {
	if m.addr == "" {
		return func() {}, nil
	}
	m.status.srv = srv
	reg, err := lnotel.ObserveServer(srv, m.mp)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", m.addr)
	if err != nil {
		reg.Unregister()
		return nil, err
	}
	// A GET pattern matches HEAD too; ServeMux answers any other method on
	// these paths with a 405 whose Allow names GET and HEAD.
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(m.status.status(time.Now()))
	})
	hs, cl := newSideServer(l, m.conns, mux)
	m.status.side = cl
	served := make(chan struct{})
	go func() { hs.Serve(cl); close(served) }()
	snapCtx, stopSnaps := context.WithCancel(context.Background())
	snapsDone := make(chan struct{})
	go func() { m.status.run(snapCtx); close(snapsDone) }()
	fmt.Fprintf(stdout, "METRICS http://%s/metrics http://%s/status\n", l.Addr(), l.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		stopSnaps()
		<-snapsDone
		hs.Shutdown(sctx)
		hs.Close() // the connections Shutdown did not see idle in time
		<-served
		reg.Unregister()
		m.mp.Shutdown(sctx)
		if m.tp != nil {
			m.tp.Shutdown(sctx)
		}
	}, nil
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
