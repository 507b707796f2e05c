package transport

// WriteWaiter is told by [Session.AfterWrites] that the bytes before the
// call have been written (ok), or that the session closed first.
type WriteWaiter interface {
	Written(ok bool)
}

// writeWatch is an [Session.AfterWrites] call waiting for the bytes that
// were unwritten when it was made.
type writeWatch struct {
	left int         // of those bytes, how many are not written yet
	w    WriteWaiter // the caller's
}

// AfterWrites calls w.Written once every byte sent or queued on s before
// the call has been written to the connection (ok), or once s is closing
// with some of them unwritten (ok false; a session closing when
// AfterWrites is called gives false too). Written runs at once, on the
// calling goroutine, when nothing is unwritten; otherwise on the goroutine
// that completes the write (a sender, the goroutine that ends a Batch or
// a receive, or the session's own), after its write and with no lock
// held. It must not block: writes after it wait for it. Waiting costs no
// allocation beyond the list's growth (w is the caller's). A server times a reply with it
// from its request's read to its write (rpc's CallEvent.Written).
//
// The bytes counted are those handed to the write: a datagram a UDP
// socket drops counts as written. Safe for concurrent use.
func (s *Session) AfterWrites(w WriteWaiter) {
	s.mu.Lock()
	left := s.heldLocked()
	if s.Reason() != ReasonNone {
		s.mu.Unlock()
		w.Written(false)
		return
	}
	if left == 0 {
		s.mu.Unlock()
		w.Written(true)
		return
	}
	ws := s.waitsLocked()
	ws.afterWrites = append(ws.afterWrites, writeWatch{left: left, w: w})
	s.mu.Unlock()
}

// wroteLocked counts n more bytes written (one write of a batch or a
// direct message) against the waiting AfterWrites calls and, when some
// are now done, unlocks s.mu, runs them and locks it again: the caller
// holds the write turn, so nothing it relies on moves meanwhile. A later
// watch covers every byte an earlier one does, so the done ones are a
// prefix of the list. Called with s.mu held.
func (s *Session) wroteLocked(n int) {
	w := s.waits()
	if w == nil || len(w.afterWrites) == 0 {
		return
	}
	ws, done := w.afterWrites, 0
	for i := range ws {
		if ws[i].left -= n; ws[i].left <= 0 {
			done = i + 1
		}
	}
	if done == 0 {
		return
	}
	var kept [4]writeWatch
	ready := append(kept[:0], ws[:done]...)
	k := copy(ws, ws[done:])
	clear(ws[k:])
	w.afterWrites = ws[:k]
	s.mu.Unlock()
	runWatches(ready, true)
	s.mu.Lock()
	s.txLocked()
}

// unwrittenWatchesLocked takes the waiting AfterWrites calls of a closing
// session, for the caller to run (runWatches, false) once it has unlocked
// s.mu. Called with s.mu held.
func (s *Session) unwrittenWatchesLocked() []writeWatch {
	w := s.waits()
	if w == nil || len(w.afterWrites) == 0 {
		return nil
	}
	ws := w.afterWrites
	w.afterWrites = nil
	return ws
}

// runWatches tells the waiters of ws ok.
func runWatches(ws []writeWatch, ok bool) {
	for _, w := range ws {
		w.w.Written(ok)
	}
}
