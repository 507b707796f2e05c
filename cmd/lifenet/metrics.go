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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/rpctool"
	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// serveHooks add --metrics to `lifenet serve`: the otel module's server
// interceptor and observers, exported in Prometheus's text format at
// /metrics, and a JSON /status page.
func serveHooks() rpctool.ServeHooks {
	m := &metricsServer{}
	return rpctool.ServeHooks{
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&m.addr, "metrics", "", "lifenet: serve /metrics (Prometheus) and /status (JSON) on this HOST:PORT (port 0 picks a free one)")
			fs.Float64Var(&m.traces, "traces", 0, "lifenet, with --metrics: a server span per call, sampled parent-based at this ratio (0 to 1; 0: no spans), written where --traces-out says")
		},
		Check:   m.check,
		Config:  m.config,
		Started: m.started,
		Tracer:  func() *sdktrace.TracerProvider { return m.tp },
	}
}

type metricsServer struct {
	addr   string
	traces float64 // --traces: the sampling ratio; 0 no spans
	reg    *prometheus.Registry
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider // --traces; nil without
	status *statusRecorder
}

// check validates --metrics and --traces.
func (m *metricsServer) check() error {
	switch {
	case !(m.traces >= 0 && m.traces <= 1): // NaN too
		return fmt.Errorf("--traces %v: want a ratio from 0 to 1", m.traces)
	case m.traces > 0 && m.addr == "":
		return errors.New("--traces needs --metrics")
	case m.addr == "":
		return nil
	}
	if _, _, err := net.SplitHostPort(m.addr); err != nil {
		return fmt.Errorf("--metrics %q: want HOST:PORT", m.addr)
	}
	return nil
}

func (m *metricsServer) config(cfg *rpc.Config) error {
	if m.addr == "" {
		return nil
	}
	m.reg = prometheus.NewRegistry()
	calls := lnotel.NewCallMetrics() // the call histograms at a few hundred instructions a call, not the SDK's thousands
	exp, err := otelprom.New(otelprom.WithRegisterer(m.reg), otelprom.WithProducer(calls))
	if err != nil {
		return err
	}
	m.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m.status = newStatusRecorder(calls)
	// The call metrics from the server's OnCallDone hook, not an
	// interceptor: a third of the cost (docs/perf/observability.md).
	cfg.OnCallDone = lnotel.ServerCallDone(lnotel.WithMeterProvider(m.mp), lnotel.WithCallMetrics(calls))
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
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(m.status.status(time.Now()))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(l)
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
