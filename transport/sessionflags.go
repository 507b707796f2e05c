package transport

// A session's flags and reasons, set and read from any goroutine
// (Session.flags): one word, so that a Session stays in the 144-byte size
// class. Bits 0 to 7 are flags, bits 8 to 15 the Reason a drain closes
// with, bits 16 to 23 the Reason the session closed with (once set, it
// stays). The flags are set once each, but for the exchange's.
const (
	flagStarted    uint32 = 1 << iota // open has begun (receive goroutine, or Dial before it starts)
	flagOpened                        // open has set handler: other goroutines may read it (Handler)
	flagDraining                      // a drain (Shutdown, AbortAfterWrites): stop reading, flush, then close
	flagInExchange                    // a sync client's Exchange runs its callbacks inside a read of conn: a close must not wait for that read (closeWith)
	flagFinished                      // the receive side has ended; no more sends (set under mu)
	flagEnded                         // finish has run OnClose: Done is closed (set under mu)
	flagRetired                       // io has been added to the owner's totals (set under the owner's lock)
	flagAdopted                       // served by Server.Adopt: it holds no place in MaxConns of its own (set before the session is shared)

	drainShift  = 8  // bits 8 to 15: the Reason a drain closes with (ReasonNone: ReasonShutdown)
	reasonShift = 16 // bits 16 to 23: the Reason the session closed with (Reason)
	reasonMask  = 0xff << reasonShift
)

// has reports whether flag f is set.
func (s *Session) has(f uint32) bool { return s.flags.Load()&f != 0 }

// draining reports whether a drain has started.
func (s *Session) draining() bool { return s.has(flagDraining) }

// finished reports that the receive side has ended: no more sends.
func (s *Session) finished() bool { return s.has(flagFinished) }

// sendsEnded reports that no more sends may be queued: the receive side
// has ended, or closing has started.
func (s *Session) sendsEnded() bool { return s.has(flagFinished | reasonMask) }

// drainReason is the Reason the drain closes with (ReasonNone: the
// default, ReasonShutdown).
func (s *Session) drainReason() Reason { return Reason(s.flags.Load() >> drainShift & 0xff) }

// setDrain starts a drain that closes with r (ReasonNone: ReasonShutdown),
// or makes r the reason of the one started: the last given wins.
func (s *Session) setDrain(r Reason) {
	for {
		old := s.flags.Load()
		if s.flags.CompareAndSwap(old, old&^(0xff<<drainShift)|uint32(r)<<drainShift|flagDraining) {
			return
		}
	}
}

// setReason makes r the Reason the session closed with, unless it has
// one: the first given wins. It reports whether r did.
func (s *Session) setReason(r Reason) bool {
	for {
		old := s.flags.Load()
		if old&reasonMask != 0 {
			return false
		}
		if s.flags.CompareAndSwap(old, old|uint32(r)<<reasonShift) {
			return true
		}
	}
}
