package transport

import (
	"testing"
	"unsafe"
)

// A Session stays in the 192-byte size class, and its send state (made
// by a send, dropped when the session parks) in the 144-byte one: every
// idle connection a server holds has a Session. A field added past 192
// bytes costs 16 bytes a connection; one that only a session sending
// needs goes in sendState, one that few sessions need in rareState.
func TestSessionIs192BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 192 {
		t.Errorf("Session is %d bytes, want at most 192 (pack small fields with the others, or put send-side ones in sendState, rare ones in rareState)", n)
	}
	if n := unsafe.Sizeof(sendState{}); n > 144 {
		t.Errorf("sendState is %d bytes, want at most 144", n)
	}
}
