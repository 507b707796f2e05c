package otel

import "testing"

// The context keys of OpenTelemetry's and rpc's lookups were found, so
// that a dropped root call costs one context (TestSamplingDropsARoot…
// checks what the handler sees through it).
func TestUnsampledContextKeysFound(t *testing.T) {
	if !ctxKeys.ok {
		t.Fatalf("context keys not found: %+v", ctxKeys)
	}
}
