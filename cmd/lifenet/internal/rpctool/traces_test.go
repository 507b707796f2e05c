package rpctool

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// tracingHooks are the lifenet command's --traces as its metrics.go
// wires them: the otel module's server interceptor on a provider of its
// own, every call sampled, the provider shut down by Started's stop.
// With tracing false Tracer returns nil, as without --traces.
func tracingHooks(tracing bool) ServeHooks {
	var tp *sdktrace.TracerProvider
	return ServeHooks{
		Config: func(cfg *rpc.Config) error {
			if tracing {
				tp = sdktrace.NewTracerProvider()
				cfg.Interceptors = append(cfg.Interceptors,
					lnotel.ServerInterceptor(lnotel.WithoutMetrics(), lnotel.WithTracerProvider(tp), lnotel.WithSampling(1)))
			}
			return nil
		},
		Started: func(context.Context, *rpc.Server, io.Writer) (func(), error) {
			return func() {
				if tp != nil {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					tp.Shutdown(ctx)
				}
			}, nil
		},
		Tracer: func() *sdktrace.TracerProvider { return tp },
	}
}

// serveTraced is `lifenet serve` with tracingHooks.
func serveTraced(tracing bool) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return ServeWith(ctx, args, stdout, stderr, tracingHooks(tracing))
	}
}

// span is what the tests read of stdouttrace's JSON line.
type span struct {
	Name        string
	SpanKind    trace.SpanKind
	SpanContext struct{ TraceID, SpanID string }
}

// spansIn decodes out's lines that are spans; every line but READY must
// be one.
func spansIn(t *testing.T, out string) []span {
	t.Helper()
	var spans []span
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "READY ") {
			continue
		}
		var s span
		if err := json.Unmarshal([]byte(l), &s); err != nil || s.Name == "" {
			t.Fatalf("line %q: %v; want one span a line", l, err)
		}
		spans = append(spans, s)
	}
	return spans
}

// callAdd calls Bench/Add on addr and checks its answer.
func callAdd(t *testing.T, addr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Call(context.Background(), []string{addr, "Bench/Add", "a=1", "b=2"}, &out, &errOut); code != 0 || out.String() != "3\n" {
		t.Fatalf("call: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}
}

// TestTracesToFile: serve --traces-out FILE writes a span of the call,
// named by its action, a server span, as a JSON line, and the file holds
// it once serve stopped; a second run appends.
func TestTracesToFile(t *testing.T) {
	leakcheck.Check(t)
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	for run := 1; run <= 2; run++ {
		s := start(t, serveTraced(true), "--port", "0", "--udp=false", "--traces-out", file)
		callAdd(t, strings.TrimPrefix(strings.Fields(s.ready)[1], "tcp://"))
		if code := s.stop(t); code != 0 {
			t.Fatalf("serve stopped: exit %d, stderr %q", code, s.stderr)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		spans := spansIn(t, string(b))
		if len(spans) != run {
			t.Fatalf("run %d: %d spans in the file, want %d (one a call, appended): %q", run, len(spans), run, b)
		}
		if sp := spans[run-1]; sp.Name != "Bench/Add" || sp.SpanKind != trace.SpanKindServer || len(sp.SpanContext.TraceID) != 32 {
			t.Errorf("span %+v: want Bench/Add, a server span with a trace ID", sp)
		}
	}
}

// TestTracesToStdout: by default the spans go to serve's stdout after
// its READY line, each within about a second of its call, while serve
// runs; with --traces-out none, nowhere.
func TestTracesToStdout(t *testing.T) {
	leakcheck.Check(t)
	for _, dest := range []string{"", "none"} {
		args := []string{"--port", "0", "--udp=false"}
		if dest != "" {
			args = append(args, "--traces-out", dest)
		}
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		out := &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- serveTraced(true)(ctx, args, pw, io.Discard)
			pw.Close()
		}()
		copied := make(chan struct{})
		go func() { io.Copy(out, pr); close(copied) }()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		ready, _, _ := strings.Cut(out.String(), "\n")
		if !strings.HasPrefix(ready, "READY tcp://") {
			cancel()
			t.Fatalf("%q: first line %q, want READY", args, ready)
		}
		callAdd(t, strings.TrimPrefix(strings.Fields(ready)[1], "tcp://"))
		if dest == "" { // the span shows while serve runs
			for !strings.Contains(out.String(), `"Name":"Bench/Add"`) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("%q: serve exited %d", args, code)
		}
		<-copied
		spans := spansIn(t, out.String())
		switch {
		case dest == "" && (len(spans) != 1 || spans[0].Name != "Bench/Add"):
			t.Errorf("default --traces-out: spans %+v on stdout, want the call's Bench/Add", spans)
		case dest == "none" && len(spans) != 0:
			t.Errorf("--traces-out none: spans %+v on stdout, want none", spans)
		}
	}
}

// TestTracesOutUsage: --traces-out without tracing, with --impl netrpc,
// or naming a file that cannot be made is a bad command line (exit 2,
// one line); without hooks that trace serve has no --traces-out.
func TestTracesOutUsage(t *testing.T) {
	for _, c := range []struct {
		cmd  func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{serveTraced(false), []string{"--port", "0", "--udp=false", "--traces-out", "stdout"}, "--traces-out needs --traces"},
		{serveTraced(true), []string{"--impl", "netrpc", "--traces-out", "stdout"}, "--traces-out: lifenet servers only"},
		{serveTraced(true), []string{"--port", "0", "--udp=false", "--traces-out", filepath.Join(t.TempDir(), "no", "such", "dir", "f")}, "--traces-out: open "},
		{Serve, []string{"--traces-out", "stdout"}, "traces-out"},
	} {
		var out, errOut bytes.Buffer
		code := c.cmd(context.Background(), c.args, &out, &errOut)
		if msg := errOut.String(); code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, one line with %s", c.args, code, out.String(), msg, c.want)
		}
	}
}
