package transport

import (
	"testing"
	"unsafe"
)

// A Session stays in the 176-byte size class, and its send state (made
// by a send, dropped when the session parks) in the 144-byte one: every
// idle connection a server holds has a Session. A field added past 176
// bytes costs 16 bytes a connection; one that only a session sending
// needs goes in sendState, one that few sessions need in rareState.
func TestSessionIs176BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 176 {
		t.Errorf("Session is %d bytes, want at most 176 (pack small fields with the others, or put send-side ones in sendState, rare ones in rareState)", n)
	}
	if n := unsafe.Sizeof(sendState{}); n > 144 {
		t.Errorf("sendState is %d bytes, want at most 144", n)
	}
}

// A session's flags keep each other: a drain's reason is the last given,
// the draining flag set alone (Shutdown) keeps it, and the open and
// exchange flags come and go around them.
func TestSessionFlagsKeepEachOther(t *testing.T) {
	var s Session
	s.flags.Or(flagOpened)
	s.setDrain(ReasonProtocol)
	s.flags.Or(flagInExchange)
	s.setDrain(ReasonSlowConsumer)
	s.flags.Or(flagDraining)
	s.flags.And(^flagInExchange)
	if !s.draining() || s.drainReason() != ReasonSlowConsumer || s.flags.Load()&flagOpened == 0 || s.flags.Load()&flagInExchange != 0 {
		t.Fatalf("flags %#x: draining %v, reason %v", s.flags.Load(), s.draining(), s.drainReason())
	}
	var fresh Session
	if fresh.draining() || fresh.drainReason() != ReasonNone {
		t.Fatal("a new session drains")
	}
}
