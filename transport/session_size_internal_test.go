package transport

import (
	"testing"
	"time"
	"unsafe"
)

// A Session stays in the 144-byte size class, and its send state (made
// by a send, dropped when the session parks) in the 160-byte one: every
// idle connection a server holds has a Session. A field added past 144
// bytes costs 16 bytes a connection; one that only a session sending
// needs goes in sendState, one that few sessions need in rareState, a
// flag set once in the flags word.
func TestSessionIs144BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 144 {
		t.Errorf("Session is %d bytes, want at most 144 (pack small fields with the others, or put send-side ones in sendState, rare ones in rareState)", n)
	}
	if n := unsafe.Sizeof(sendState{}); n > 160 {
		t.Errorf("sendState is %d bytes, want at most 160", n)
	}
}

// A session's flags keep each other: a drain's reason is the last given,
// the draining flag set alone (Shutdown) keeps it, the close's reason is
// the first given, and the other flags come and go around them.
func TestSessionFlagsKeepEachOther(t *testing.T) {
	var s Session
	s.flags.Or(flagOpened)
	s.setDrain(ReasonProtocol)
	s.flags.Or(flagInExchange)
	if s.sendsEnded() {
		t.Fatal("sends ended before the close")
	}
	if !s.setReason(ReasonIdle) || s.setReason(ReasonLocal) {
		t.Fatal("the close's reason is not the first given")
	}
	s.setDrain(ReasonSlowConsumer)
	s.flags.Or(flagDraining | flagFinished)
	s.flags.And(^flagInExchange)
	if !s.draining() || s.drainReason() != ReasonSlowConsumer || !s.has(flagOpened) || s.has(flagInExchange) ||
		s.Reason() != ReasonIdle || !s.finished() || !s.sendsEnded() || s.has(flagEnded) {
		t.Fatalf("flags %#x: draining %v, drain reason %v, reason %v", s.flags.Load(), s.draining(), s.drainReason(), s.Reason())
	}
	var fresh Session
	if fresh.draining() || fresh.drainReason() != ReasonNone || fresh.Reason() != ReasonNone || fresh.sendsEnded() {
		t.Fatal("a new session drains or has ended")
	}
	if Reason(0xff) < ReasonHandedOff {
		t.Fatal("a Reason takes more than the 8 bits a session keeps it in")
	}
}

// A receive's stamp gives an age never more than the true one, at most
// two stamp units less, through the stamps' wrap; a stamp taken after the
// reading the age is taken at gives zero.
func TestReceiveAgeIsNeverMore(t *testing.T) {
	const unit = int64(1) << stampShift
	for _, base := range []int64{0, 12345, 1<<(32+stampShift) - 3*unit, 1<<(32+stampShift) + 7} { // the last two: across the wrap
		for _, age := range []int64{0, 1, unit - 1, unit, 3*unit + 5, int64(clockTick), int64(20 * time.Minute), 400 * 24 * int64(time.Hour)} {
			got := int64(ageAt(stampOf(base), base+age))
			if got > age || got < age-2*unit {
				t.Errorf("at %d, age %d: got %d", base, age, got)
			}
		}
		if got := ageAt(stampOf(base+5*unit), base); got != 0 {
			t.Errorf("a stamp after the reading: age %v", got)
		}
	}
}
