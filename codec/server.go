package codec

import (
	"cmp"
	"context"
	"net"
	"sync"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/transport"
)

// Server is a transport server whose connections run a pipeline: the
// codec-level counterpart of Dial. All methods are safe for concurrent use.
type Server struct {
	ts       *transport.Server
	opts     *Options // &side.opts
	budget   *budget  // bytes held in incomplete frames (MaxPartialBytes); nil: no cap
	partials partials
	side     connSide // what its connections have of it: its options, itself
	stop     chan struct{}
	once     sync.Once
}

// NewServer returns a server with the transport settings cfg and the codec
// options opts. It listens on nothing until Listen, Serve or ServePacket.
func NewServer(cfg transport.Config, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg.Log = cmp.Or(cfg.Log, opts.Log) // neither: the transport takes slog.Default()
	s := &Server{side: connSide{opts: opts}, stop: make(chan struct{})}
	s.side.server, s.opts = s, &s.side.opts
	if opts.MaxPartialBytes >= 0 { // negative: no cap
		s.budget = &budget{limit: cmp.Or(opts.MaxPartialBytes, DefaultMaxPartialBytes)}
	}
	ts, err := transport.NewServer(cfg, s.hooks())
	if err != nil {
		return nil, err
	}
	s.ts = ts
	return s, nil
}

// hooks runs the pipeline on every session of the server.
func (s *Server) hooks() transport.Hooks {
	return transport.Hooks{
		BatchSends:   true, // replies to the frames of one read leave in one write
		NoWaitSends:  true, // a client that does not read is closed, never waited for
		Route:        s.opts.Route,
		RouteTimeout: s.opts.RouteTimeout,
		HandOff:      s.opts.HandOff,
		NewHandler: func(sess *transport.Session) transport.SessionHandler {
			return (*sessionHandler)(newConn(sess, &s.side))
		},
	}
}

// DefaultMaxPartialBytes is a server's default Options.MaxPartialBytes.
const DefaultMaxPartialBytes = 256 << 20

// expireSweep is how often the server looks for frames past their Expire.
const expireSweep = 250 * time.Millisecond

// partials is the set of a server's connections that hold part of a
// frame: the expiry sweep looks at these alone, so that a held connection
// that is idle costs it nothing, and runs only while the set is not empty.
type partials struct {
	mu       sync.Mutex
	conns    map[*Conn]struct{}
	sweeping bool // a sweep goroutine runs
}

// hold adds c (its framer started a partial frame) or, with held false,
// removes it (its framer holds none any more).
func (s *Server) hold(c *Conn, held bool) {
	ps := &s.partials
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !held {
		delete(ps.conns, c)
		return
	}
	if ps.conns == nil {
		ps.conns = make(map[*Conn]struct{})
	}
	ps.conns[c] = struct{}{}
	select {
	case <-s.stop: // closed: no sweep
	default:
		if !ps.sweeping {
			ps.sweeping = true
			go s.sweep()
		}
	}
}

// sweep ends the connections that have held an incomplete frame for longer
// than its Expire. A read would notice only if more bytes came: a peer that
// stops in the middle of a frame would otherwise hold its buffer until the
// idle timeout. It ends when no connection holds part of a frame.
func (s *Server) sweep() {
	t := time.NewTicker(expireSweep)
	defer t.Stop()
	var expired []*Conn
	for {
		select {
		case <-s.stop:
			s.partials.mu.Lock()
			s.partials.sweeping = false
			s.partials.mu.Unlock()
			return
		case now := <-t.C:
			var more bool
			expired, more = s.expired(mono.Of(now), expired[:0])
			for _, c := range expired {
				c.chain.sess.Abort(ErrFrameExpired) // its framer's Reset removes it
			}
			if !more {
				return
			}
		}
	}
}

// expired appends to dst the connections whose partial frame is past its
// Expire at now; more is false when none holds a partial frame, and the
// sweep is then over.
func (s *Server) expired(now int64, dst []*Conn) (_ []*Conn, more bool) {
	ps := &s.partials
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.conns) == 0 {
		ps.sweeping, ps.conns = false, nil // the map's memory goes with the burst
		return dst, false
	}
	for c := range ps.conns {
		if c.frameExpired(now) {
			dst = append(dst, c)
		}
	}
	return dst, true
}

func (s *Server) stopSweep() { s.once.Do(func() { close(s.stop) }) }

// Listen opens a listener and serves it; see transport.Server.Listen.
func (s *Server) Listen(ctx context.Context, network, address string) (net.Addr, error) {
	return s.ts.Listen(ctx, network, address)
}

// Serve accepts connections from l; see transport.Server.Serve.
func (s *Server) Serve(l net.Listener) error { return s.ts.Serve(l) }

// Adopt serves c as one of the server's connections, running the pipeline
// from its first byte; see transport.Server.Adopt.
func (s *Server) Adopt(c net.Conn) error { return s.ts.Adopt(c) }

// ServePacket serves datagrams from pc, each holding whole frames; see
// transport.Server.ServePacket.
func (s *Server) ServePacket(pc net.PacketConn) error { return s.ts.ServePacket(pc) }

// Shutdown stops accepting, lets each connection finish the messages it
// is handling and write its replies, then closes it; see
// transport.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	defer s.stopSweep()
	return s.ts.Shutdown(ctx)
}

// Close closes the listeners and every connection at once and waits for
// their goroutines.
func (s *Server) Close() error {
	defer s.stopSweep()
	return s.ts.Close()
}

// Conn returns the open connection whose transport session has the ID id
// (see transport.Server.Session), once its OnOpen has run.
func (s *Server) Conn(id uint64) (*Conn, bool) {
	if sess, ok := s.ts.Session(id); ok {
		if h, ok := sess.Handler().(*sessionHandler); ok {
			return (*Conn)(h), true
		}
	}
	return nil, false
}

// Range calls f for each open connection until f returns false. A
// connection's OnOpen (and its SetState) has run before Range sees it.
func (s *Server) Range(f func(c *Conn) bool) {
	s.ts.Range(func(sess *transport.Session) bool {
		h, ok := sess.Handler().(*sessionHandler)
		return !ok || f((*Conn)(h))
	})
}

// PartialBytes returns the bytes all connections together hold in
// incomplete frames now, their framers' and what [Server.Reserve] counts,
// which Options.MaxPartialBytes caps (0 when it is negative: without a cap
// nothing is counted).
func (s *Server) PartialBytes() int64 {
	if s.budget == nil {
		return 0
	}
	return s.budget.used.Load()
}

// Reserve counts n bytes of an incomplete unit held outside the pipeline
// (an HTTP request's body, say) in Options.MaxPartialBytes, with the
// frames the connections hold: [ErrMemoryCap] when they do not fit, and
// nothing is counted then. Release gives them back.
func (s *Server) Reserve(n int) error {
	if !s.budget.take(n) {
		return ErrMemoryCap
	}
	return nil
}

// Release gives back n bytes counted by Reserve.
func (s *Server) Release(n int) { s.budget.give(n) }

// Transport returns the underlying transport server (sessions, counters).
func (s *Server) Transport() *transport.Server { return s.ts }
