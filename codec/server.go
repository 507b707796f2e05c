package codec

import (
	"context"
	"net"

	"github.com/lifenet/lifenet/transport"
)

// Server is a transport server whose connections run a pipeline: the
// codec-level counterpart of Dial. All methods are safe for concurrent use.
type Server struct {
	ts   *transport.Server
	opts *Options
}

// NewServer returns a server with the transport settings cfg and the codec
// options opts. It listens on nothing until Listen, Serve or ServePacket.
func NewServer(cfg transport.Config, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: &opts}
	ts, err := transport.NewServer(cfg, serverHooks(s.opts))
	if err != nil {
		return nil, err
	}
	s.ts = ts
	return s, nil
}

// serverHooks runs o.Pipeline on every session of a server.
func serverHooks(o *Options) transport.Hooks {
	return transport.Hooks{
		BatchSends: true, // replies to the frames of one read leave in one write
		NewHandler: func(s *transport.Session) transport.SessionHandler { return newConn(s, o) },
	}
}

// Listen opens a listener and serves it; see transport.Server.Listen.
func (s *Server) Listen(ctx context.Context, network, address string) (net.Addr, error) {
	return s.ts.Listen(ctx, network, address)
}

// Serve accepts connections from l; see transport.Server.Serve.
func (s *Server) Serve(l net.Listener) error { return s.ts.Serve(l) }

// ServePacket serves datagrams from pc, each holding whole frames; see
// transport.Server.ServePacket.
func (s *Server) ServePacket(pc net.PacketConn) error { return s.ts.ServePacket(pc) }

// Shutdown stops accepting, lets each connection finish the messages it
// is handling and write its replies, then closes it; see
// transport.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error { return s.ts.Shutdown(ctx) }

// Close closes the listeners and every connection at once and waits for
// their goroutines.
func (s *Server) Close() error { return s.ts.Close() }

// Transport returns the underlying transport server (sessions, counters).
func (s *Server) Transport() *transport.Server { return s.ts }
