package transport

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
)

// Hooks are the callbacks of a server or client. Any may be nil. OnOpen,
// OnReceive and OnClose of one session run on that session's receive
// goroutine, in that order, never concurrently with each other.
type Hooks struct {
	// NewHandler, if set, gives each session a handler of its own when it
	// starts, before OnOpen: its Receive and Closed run in place of
	// OnReceive and OnClose (set one or the other). A protocol layer keeps
	// its per-connection state in the handler, as the codec package does;
	// a [ParkHandler] is told when its session parks.
	NewHandler func(s *Session) SessionHandler
	// OnOpen runs when a session starts, before its first OnReceive.
	OnOpen func(s *Session)
	// OnReceive gets the bytes of each read (TCP, Unix) or datagram (UDP).
	// p is valid only during the call: keep p.Share() or p.Clone() to hold
	// the bytes longer, and release that later. Do not release p.
	OnReceive func(s *Session, p *packet.Packet)
	// OnClose runs once when a session has ended, with the reason.
	OnClose func(s *Session, err *CloseError)
	// BatchSends queues the sends made while OnReceive runs and writes
	// them in one vectored write when it returns, instead of one write per
	// send: for servers that answer many frames of one read from the
	// receive goroutine (the codec layer sets it). On UDP each send is
	// still one datagram; on Linux those queued together leave in one
	// sendmmsg. Sends from other
	// goroutines during that time are written by the receive goroutine
	// too, so leave it off where other goroutines stream large amounts
	// (clients): the receive goroutine would stop reading while it writes.
	BatchSends bool
	// NoWaitSends makes every send admitted as Enqueue admits it: it never
	// waits for room, and one that would leave more than twice
	// SendQueueBytes queued and being written closes the session as a slow
	// consumer (nats-server's rule: a server is never held by a client
	// that does not read, and never holds more for it than that). Unlike
	// Enqueue, a send still writes the queue itself when no write is in
	// progress. For servers (the codec layer sets it): their replies then
	// cannot pile up in the goroutines waiting to send them.
	NoWaitSends bool
	// Route, if set, decides which stack serves a server's stream
	// connection, from its first bytes (borrowed; called again with more
	// while it returns RouteMore; full says the receive buffer is full and
	// no more can come, which it then takes as RouteServe). Until it
	// decides, the session has no handler and OnOpen has not run. Set
	// HandOff with it.
	Route func(first []byte, full bool) Route
	// RouteTimeout bounds the time from a connection's first byte to
	// Route's decision (0: none beyond FirstByteTimeout and IdleTimeout):
	// past it the connection ends (ReasonProtocol).
	RouteTimeout time.Duration
	// HandOff takes the connections Route hands off ([RouteHandOff]), on
	// their receive goroutine, which then ends: it must not block.
	HandOff func(c *HandedConn)
	// OnError reports errors that end no session: a failed Accept (the
	// server backs off and retries) or a failed UDP read. It runs on the
	// accept or UDP goroutine.
	OnError func(err error)
}

// SessionHandler handles the traffic of one session; see Hooks.NewHandler.
// Its methods run on the session's receive goroutine, Receive with the
// same contract as Hooks.OnReceive and Closed as Hooks.OnClose.
type SessionHandler interface {
	Receive(s *Session, p *packet.Packet)
	Closed(s *Session, err *CloseError)
}

// ParkHandler is a [SessionHandler] told when its session parks
// (Config.ParkAfter): a session with nothing to read gives up its
// goroutine and buffers, and the handler may drop what only a busy
// session needs, which its next Receive makes again. Parked runs on the
// session's receive goroutine, never concurrently with Receive or Closed,
// and must not block; a session that cannot park after all reads on.
type ParkHandler interface {
	SessionHandler
	Parked(s *Session)
}

func (h *Hooks) validate() error {
	if h.NewHandler != nil && (h.OnReceive != nil || h.OnClose != nil) || (h.Route == nil) != (h.HandOff == nil) {
		return ErrHooks
	}
	return nil
}

// endpoint is what a session needs from the server or client that owns it.
type endpoint struct {
	cfg   Config
	hooks Hooks
	pull  func(*Session, *packet.Packet) // a pull-mode client's queue, in place of the hooks
	// selfRead: a [ReceiveSync] client's reader, whose callers read; nil
	// otherwise. No receive loop ends its session's drain or finishes it.
	selfRead *syncReader
	srv      *Server        // the server whose endpoint this is; nil for a client
	retire   func(*Session) // the owner's bookkeeping of an ended session (it must retire io), run before OnClose
	stats    counters
	log      *slog.Logger     // Config.Log, or the default logger when the owner was made
	limits   *logattr.Limiter // the rate limit of its Warn and Error lines
}

// selfReader is the [ReceiveSync] client's reader while its callers read:
// nil otherwise, and once StartReceiving gave the session to a receive
// goroutine.
func (ep *endpoint) selfReader() *syncReader {
	if r := ep.selfRead; r != nil && !r.handedOff.Load() {
		return r
	}
	return nil
}

// Session is one connection (or UDP peer) of a server, or a client's
// connection. All methods are safe for concurrent use; sends from many
// goroutines are written in the order Send was called.
type Session struct {
	id      uint64
	conn    net.Conn // nil for UDP virtual sessions
	ep      *endpoint
	created int64   // mono reading of the start
	io      traffic // this session's bytes and messages

	mu         sync.Mutex
	*sendState            // the queue, its byte counts, staging buffers and the write side: made by the first send, dropped when the session parks (sendstate.go); a datagram session's for its whole life
	rare       *rareState // what few sessions need (senders waiting for room, Done, the bag, an error close's cause): made on first use

	handler SessionHandler // from Hooks.NewHandler; set before the first receive

	poll *poller // the poller the session acquired when it first parked (released at finish; park.go)

	// The small fields, together (a Session's size class counts for every
	// idle connection a server holds).
	lastRx    atomic.Uint32 // the coarse clock at the last receive, as a stamp (stampOf)
	flags     atomic.Uint32 // flags, a drain's Reason and the close's Reason (sessionflags.go)
	keepStage bool          // a client's stream session, or a server's that parks: a written staging buffer is kept for the next SendBytes (spareStage; mu), given back when the session parks
	writing   bool          // some goroutine is flushing the queue (mu)
	datagram  bool          // UDP: each receive is one datagram

	// Parking (park.go): the receive goroutine's state, owned by whichever
	// goroutine serves the session.
	parkState atomic.Uint32 // parkRunning, parkParked or parkWoken
	pollSlot  int32         // the session's slot in the poller, plus one (0: none)
	gotFirst  bool          // a byte has been received
	resumed   bool          // woken from parking: the next read is the first since
	polled    bool          // the connection is on the poller's watch list
	noPark    bool          // parking failed once: the session keeps its goroutine
}

// sendWaits is the state of a session whose send queue has been full:
// the senders waiting for room and the stall watch (send.go). Guarded by
// the session's mu. Apart from the Session, which most sessions (a few
// bytes now and then) never need it in.
type sendWaits struct {
	waitq    []uint64      // tickets of the senders waiting for room, in arrival order
	tickets  uint64        // the last ticket given
	room     chan struct{} // closed when room may have come (made by a waiting sender)
	stall    *time.Timer   // the stall watch
	watching bool          // the stall watch runs
	stallOut uint64        // bytes written when the watch last saw progress
	stallAt  int64         // mono reading of then

	afterWrites []writeWatch // AfterWrites calls waiting for their bytes (afterwrites.go)
}

// rareState is the state few sessions need, apart from the Session, whose
// size counts for every idle connection a server holds. Guarded by the
// session's mu; made on first use (rareLocked).
type rareState struct {
	sendWaits               // used the first time the queue is full, or by AfterWrites
	done      chan struct{} // made by the first Done: most sessions are never asked
	items     map[any]any   // Set's values
	cause     error         // the close's cause (none for a peer's close); before the close, the cause a drain closes with (AbortAfterWrites)
}

// causeLocked returns the close's cause (causeOf's rules), or the cause a
// drain will close with; nil for none. Called with s.mu held.
func (s *Session) causeLocked() error {
	if s.rare == nil {
		return nil
	}
	return s.rare.cause
}

// setCauseLocked sets the cause; a nil one makes no rareState. Called with
// s.mu held.
func (s *Session) setCauseLocked(err error) {
	if err != nil || s.rare != nil {
		s.rareLocked().cause = err
	}
}

// rareLocked returns the session's rareState, made on first use. Called
// with s.mu held.
func (s *Session) rareLocked() *rareState {
	if s.rare == nil {
		s.rare = new(rareState)
	}
	return s.rare
}

// waitsLocked returns the session's sendWaits, made on first use. Called
// with s.mu held.
func (s *Session) waitsLocked() *sendWaits { return &s.rareLocked().sendWaits }

// waits returns the session's sendWaits, or nil before its first use.
// Called with s.mu held.
func (s *Session) waits() *sendWaits {
	if s.rare == nil {
		return nil
	}
	return &s.rare.sendWaits
}

// waitingLocked is the number of senders waiting for room. Called with
// s.mu held.
func (s *Session) waitingLocked() int {
	if s.rare == nil {
		return 0
	}
	return len(s.rare.waitq)
}

// sender writes batches of packets for a session: a stream connection, or
// the UDP server socket addressed to one peer.
type sender interface {
	writeBatch(s *Session, batch []*packet.Packet) error
	close() error
}

// owner returns the server of an accepted connection; nil for a
// client's session and a UDP peer's.
func (s *Session) owner() *Server {
	if s.datagram {
		return nil
	}
	return s.ep.srv
}

// newSession returns a stream session of conn (dgram nil: its stream
// sender is made by its first send, outLocked), or a datagram session
// writing through dgram: a UDP peer's (conn nil, dgram its *udpSender) or
// a client's datagram socket's. The addresses are conn's, or dgram's: not
// kept apart.
func newSession(ep *endpoint, id uint64, conn net.Conn, dgram sender) *Session {
	s := &Session{id: id, conn: conn, ep: ep, created: mono.Now()}
	if dgram != nil {
		s.datagram = true
		s.sendState = sendStates.Get().(*sendState) // never given back: it holds the sender
		s.out = dgram
	}
	s.lastRx.Store(stampOf(now()))
	return s
}

// datagramOut returns a datagram session's sender, which its send state
// holds for the session's life (set before the session is shared: read
// without s.mu).
func (s *Session) datagramOut() sender { return s.sendState.out }

// Conn returns the session's connection (a *tls.Conn for TLS, whose
// ConnectionState tells the handshake), or nil for a UDP peer. Reading it
// or closing it directly breaks the session: it is for inspection. On
// Linux a server's plain TCP or Unix connection, which parks, is not a
// *net.TCPConn but the transport's own net.Conn over the descriptor (see
// docs/design/parking.md); it implements syscall.Conn, and its
// SyscallConn's Control reaches the socket for options.
func (s *Session) Conn() net.Conn {
	if s.datagram {
		return nil
	}
	return s.conn
}

// Handler returns the handler Hooks.NewHandler gave the session, or nil
// (none yet: a server's connection whose first bytes have not come).
func (s *Session) Handler() SessionHandler {
	if s.flags.Load()&flagOpened == 0 {
		return nil
	}
	return s.handler
}

// ID returns the session's identifier, unique within its server.
func (s *Session) ID() uint64 { return s.id }

// LocalAddr returns the local address.
func (s *Session) LocalAddr() net.Addr {
	if s.conn == nil {
		return s.datagramOut().(*udpSender).u.pc.LocalAddr()
	}
	return s.conn.LocalAddr()
}

// RemoteAddr returns the peer's address.
func (s *Session) RemoteAddr() net.Addr {
	if s.conn == nil {
		return s.datagramOut().(*udpSender).to
	}
	return s.conn.RemoteAddr()
}

// Created returns when the session started.
func (s *Session) Created() time.Time { return mono.Time(s.created) }

// LastActive returns when the session last received bytes (to the
// resolution of the coarse clock, 250 ms).
func (s *Session) LastActive() time.Time { return mono.Time(s.lastRxAt()) }

// Done is closed when the session has ended and OnClose has run.
func (s *Session) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rareLocked()
	if r.done == nil {
		r.done = make(chan struct{})
		if s.has(flagEnded) {
			close(r.done)
		}
	}
	return r.done
}

// Reason returns why the session ended, or [ReasonNone] while it is open.
func (s *Session) Reason() Reason { return Reason(s.flags.Load() >> reasonShift & 0xff) }

// Set stores a value in the session's key/value bag: the one place for
// application state that belongs to this connection (NewLife's
// NetSession items). Safe for concurrent use; keys compare as map keys, so
// use an unexported key type of your own, as with context values.
func (s *Session) Set(key, value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rareLocked()
	if r.items == nil {
		r.items = make(map[any]any)
	}
	r.items[key] = value
}

// Get returns a value from the session's bag.
func (s *Session) Get(key any) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rare == nil {
		return nil, false
	}
	v, ok := s.rare.items[key]
	return v, ok
}

// Datagram reports whether the session carries datagrams (UDP), where each
// receive is one whole datagram, rather than a byte stream.
func (s *Session) Datagram() bool { return s.datagram }

// Close ends the session with ReasonLocal. It does not wait; see Done.
func (s *Session) Close() error {
	s.closeWith(ReasonLocal, nil)
	return nil
}

// CloseAfterWrites ends the session once what was sent so far has been
// written ([ReasonLocal]): it stops reading, writes what is queued, then
// closes — what a server does after an answer that ends the conversation.
// It does not wait; see Done. A UDP peer session closes at once. A
// [ReceiveSync] client's session, which no receive loop serves, keeps
// reading until it closes: a goroutine writes what is queued, then closes
// and finishes it.
func (s *Session) CloseAfterWrites() error {
	if s.conn == nil || s.datagram {
		return s.Close()
	}
	if r := s.ep.selfReader(); r != nil {
		go func() {
			s.drainSends()
			r.close(s)
		}()
		return nil
	}
	s.startDrain(ReasonLocal, nil)
	return nil
}

// Abort ends the session because the peer broke the protocol
// ([ReasonProtocol]), recording err as the cause. It does not wait; what is
// queued and not yet written is dropped.
func (s *Session) Abort(err error) {
	s.closeWith(ReasonProtocol, err)
}

// AbortAfterWrites ends the session as Abort does ([ReasonProtocol], cause
// err), but once what was sent before it has been written: the answers to
// the peer's valid messages that came before the violation still reach it.
// Reading stops at once; a peer that does not read holds the session at
// most Config.WriteTimeout per write. It is meant for the session's
// handler; a [ReceiveSync] client's session, which no receive loop serves,
// is aborted at once. It does not wait.
func (s *Session) AbortAfterWrites(err error) {
	if s.ep.selfReader() != nil {
		s.Abort(err)
		return
	}
	s.startDrain(ReasonProtocol, err)
}

// startDrain stops reading, so that the receive loop (for a UDP peer, the
// datagram's delivery) writes what is queued and then closes the session
// with r and cause (endDrain). The first cause given stays.
func (s *Session) startDrain(r Reason, cause error) {
	if cause != nil {
		s.mu.Lock()
		if s.causeLocked() == nil && s.Reason() == ReasonNone { // a close under way keeps its own
			s.setCauseLocked(cause)
		}
		s.mu.Unlock()
	}
	s.setDrain(r)
	s.interruptRead()
}

// interruptRead makes the receive loop look at the session's state now: it
// ends a blocked read, and starts a goroutine for a parked session.
func (s *Session) interruptRead() {
	if s.conn != nil {
		s.conn.SetReadDeadline(interrupted)
		s.wake()
	}
}

// endDrain closes a drained session with the drain's reason and cause.
func (s *Session) endDrain() {
	r := s.drainReason()
	if r == ReasonNone {
		r = ReasonShutdown
	}
	s.mu.Lock()
	cause := s.causeLocked()
	s.mu.Unlock()
	s.closeWith(r, cause)
}

// closeWith starts closing with reason r unless closing already started;
// the first reason wins. It reports whether this call started it. The
// reason and the cause are set together under s.mu: a receive loop that
// sees the reason and finishes (reading the cause under s.mu) cannot find
// the cause not yet set. Called without s.mu held.
func (s *Session) closeWith(r Reason, cause error) bool {
	s.mu.Lock()
	if !s.setReason(r) {
		s.mu.Unlock()
		return false
	}
	s.setCauseLocked(cause)
	s.wakeLocked() // senders waiting for room fail now
	s.mu.Unlock()
	if s.conn != nil && !s.datagram {
		if s.flags.Load()&flagInExchange != 0 { // Close waits for the read the exchange's callback runs in, maybe on this goroutine
			go s.conn.Close()
		} else {
			s.conn.Close() // its stream sender's connection (which a parked session drops: shedSendScratch)
		}
		s.wake() // a parked session reads the close and finishes
	} else {
		s.datagramOut().close()
	}
	return true
}

// finish runs once on the receive goroutine after receiving stopped: it
// fails queued sends, settles counters and registries, and runs OnClose.
func (s *Session) finish() {
	s.closeWith(ReasonError, nil) // no-op unless the loop ended without a reason
	s.mu.Lock()
	s.flags.Or(flagFinished)
	s.dropSendStateLocked()
	s.wakeLocked()
	if w := s.waits(); w != nil && w.stall != nil {
		w.stall.Stop()
		w.watching = false
	}
	cause := s.causeLocked()
	unwritten := s.unwrittenWatchesLocked()
	s.mu.Unlock()
	runWatches(unwritten, false)

	if p := s.poll; p != nil {
		if s.pollSlot != 0 {
			p.release(s)
		}
		s.owner().releasePoller(p)
	}
	r := s.Reason()
	s.ep.stats.ended(r)
	if f := s.ep.retire; f != nil {
		f(s)
	}
	s.logClosed(r, cause)
	if h := s.handler; h != nil {
		h.Closed(s, &CloseError{Reason: r, Err: cause})
	} else if f := s.ep.hooks.OnClose; f != nil {
		f(s, &CloseError{Reason: r, Err: cause})
	}
	s.mu.Lock()
	s.flags.Or(flagEnded)
	if r := s.rare; r != nil && r.done != nil {
		close(r.done)
	}
	s.mu.Unlock()
}

// open runs when the session starts, on its receive goroutine: it makes
// the session's handler, then runs OnOpen.
func (s *Session) open() {
	if s.has(flagStarted) {
		return
	}
	s.flags.Or(flagStarted)
	s.logOpened()
	if f := s.ep.hooks.NewHandler; f != nil {
		s.handler = f(s)
	}
	s.flags.Or(flagOpened)
	if f := s.ep.hooks.OnOpen; f != nil {
		f(s)
	}
}

// openSafely runs open, turning a panic in NewHandler or OnOpen into a
// *[PanicError] (for callers outside the receive loop's recover).
func (s *Session) openSafely() (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic(v)
			err = &PanicError{Value: v}
		}
	}()
	s.open()
	return nil
}

// closedErr is the error for an operation on a closed session.
func (s *Session) closedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &CloseError{Reason: s.Reason(), Err: s.causeLocked()}
}
