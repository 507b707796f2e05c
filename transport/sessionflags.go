package transport

// A session's flags, set and read from any goroutine (Session.flags): one
// word, so that a Session stays in the 176-byte size class.
const (
	flagOpened     uint32 = 1 << iota // open has set handler: other goroutines may read it (Handler)
	flagDraining                      // a drain (Shutdown, AbortAfterWrites): stop reading, flush, then close
	flagInExchange                    // a sync client's Exchange runs its callbacks inside a read of conn: a close must not wait for that read (closeWith)

	drainShift = 8 // bits 8 to 15: the Reason a drain closes with (ReasonNone: ReasonShutdown)
)

// draining reports whether a drain has started.
func (s *Session) draining() bool { return s.flags.Load()&flagDraining != 0 }

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
