package transport

import (
	"testing"
	"unsafe"
)

// A Session stays in the 256-byte size class, and its send state (made
// by a send, dropped when the session parks) in the 128-byte one: every
// idle connection a server holds has a Session. A field added past 256
// bytes costs 32 bytes a connection; one that only a session sending
// needs goes in sendState.
func TestSessionIs256BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 256 {
		t.Errorf("Session is %d bytes, want at most 256 (pack small fields with the others, or put send-side ones in sendState)", n)
	}
	if n := unsafe.Sizeof(sendState{}); n > 128 {
		t.Errorf("sendState is %d bytes, want at most 128", n)
	}
}
