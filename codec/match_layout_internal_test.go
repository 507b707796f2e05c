package codec

import (
	"testing"
	"unsafe"
)

// A matcher's slots stay 48 bytes each: with 255 requests in flight on
// each of many connections they are walked by every request and reply,
// and a field added without care would take them to a cache line each.
func TestWaiterIs48Bytes(t *testing.T) {
	if n := unsafe.Sizeof(waiter{}); n > 48 {
		t.Fatalf("waiter is %d bytes, want at most 48", n)
	}
}
