package otel

import (
	"context"
	"math"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The context keys of OpenTelemetry's and rpc's lookups were found, so
// that a dropped root call costs one context (TestSamplingDropsARoot…
// checks what the handler sees through it).
func TestUnsampledContextKeysFound(t *testing.T) {
	if !ctxKeys.ok {
		t.Fatalf("context keys not found: %+v", ctxKeys)
	}
}

// A root the head sampler drops gets a trace ID that the SDK's
// TraceIDRatioBased at the same ratio drops too (a downstream service
// sampling by ratio alone agrees), the IDs of dropped roots are unique,
// and the share kept is the ratio.
func TestDroppedRootsTraceIDAgreesWithTraceIDRatioBased(t *testing.T) {
	const ratio, roots = 0.3, 4000
	h, sdk := newHeadSampler(ratio), sdktrace.TraceIDRatioBased(ratio)
	seen := make(map[trace.TraceID]bool)
	kept := 0
	for range roots {
		ctx, keep := h.root(context.Background())
		if keep {
			kept++
			continue
		}
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() || sc.IsSampled() {
			t.Fatalf("a dropped root's span context %v: want valid, unsampled", sc)
		}
		if seen[sc.TraceID()] {
			t.Fatalf("trace ID %v given twice", sc.TraceID())
		}
		seen[sc.TraceID()] = true
		if d := sdk.ShouldSample(sdktrace.SamplingParameters{TraceID: sc.TraceID()}).Decision; d != sdktrace.Drop {
			t.Fatalf("TraceIDRatioBased(%v) decides %v for dropped trace %v; want Drop", ratio, d, sc.TraceID())
		}
	}
	if share := float64(kept) / roots; math.Abs(share-ratio) > 0.05 { // 7 standard deviations
		t.Errorf("kept %.3f of the roots; want %.2f", share, ratio)
	}
}
