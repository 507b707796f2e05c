package rpctool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
)

// Where --traces-out sends the server's spans.
const (
	tracesStdout = "stdout" // one JSON object a line on serve's stdout (the default)
	tracesNone   = "none"   // nowhere: made and dropped, to measure tracing's cost alone
)

// Bounds of the span export.
const (
	// spanBatchTimeout is the longest a span waits to be written: a
	// second, so that a call's span shows while one watches.
	spanBatchTimeout = time.Second
	// spanFlushTimeout bounds the last spans' writing at shutdown.
	spanFlushTimeout = 5 * time.Second
)

// errUsage marks an error of serve's command line found once the hooks'
// Config ran (--traces-out without tracing): exit 2, not 1.
type errUsage struct{ error }

func (e errUsage) Unwrap() error { return e.error }

// spanOut is serve's --traces-out: where the spans of --traces go.
type spanOut struct {
	dest string // tracesStdout, tracesNone or a file's path
}

func (o *spanOut) flags(fs *cliflag.Command) {
	fs.StringVar(&o.dest, "traces-out", tracesStdout, "with --traces: where the spans go: stdout (one JSON object a line, "+
		"OpenTelemetry's stdouttrace form, written within a second), a file's path (the same lines, appended) or none "+
		"(made and dropped, which measures tracing's cost on the server)")
}

// start sends the spans of tp (nil: no tracing) where --traces-out says
// and returns the stop that writes the last of them and closes the file;
// it runs once the server has shut down, when no span is still open. set
// says whether the command line set --traces-out: set without tracing,
// it is a usage error.
func (o spanOut) start(tp *sdktrace.TracerProvider, set bool, stdout io.Writer) (stop func() error, err error) {
	switch {
	case tp == nil && set:
		return nil, errUsage{errors.New("--traces-out needs --traces")}
	case tp == nil || o.dest == tracesNone:
		return func() error { return nil }, nil
	}
	w, closeFile := stdout, func() error { return nil }
	if o.dest != tracesStdout {
		f, err := os.OpenFile(o.dest, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, errUsage{fmt.Errorf("--traces-out: %w", err)}
		}
		w, closeFile = f, f.Close
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		closeFile()
		return nil, err
	}
	bsp := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(spanBatchTimeout))
	tp.RegisterSpanProcessor(bsp)
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), spanFlushTimeout)
		defer cancel()
		// Shutdown writes what is queued; the provider's own Shutdown
		// (the hooks' stop, which may come first) does the same once.
		err := bsp.Shutdown(ctx)
		if cerr := closeFile(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("--traces-out: %w", cerr))
		}
		return err
	}, nil
}
