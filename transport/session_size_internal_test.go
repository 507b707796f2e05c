package transport

import (
	"testing"
	"unsafe"
)

// A Session stays in the 384-byte size class: every idle connection a
// server holds has one. A field added past it costs 32 bytes a connection.
func TestSessionIs384BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 384 {
		t.Errorf("Session is %d bytes, want at most 384 (pack small fields with the others)", n)
	}
}
