package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// clientConn is one load-generating connection of either implementation.
// send is called from one goroutine and recv from another.
type clientConn interface {
	send(b []byte) error
	// recv blocks until some echoed bytes arrive and returns how many.
	recv(ctx context.Context) (int, error)
	// queued reports bytes accepted by send but not yet written to the
	// socket (always 0 for raw, which writes in send).
	queued() int
	local() net.Addr
	close()
}

// dial opens one connection to addr with cfg's implementation, protocol
// and receive mode.
func dial(ctx context.Context, cfg *Config, addr string) (clientConn, error) {
	if cfg.rawClient() {
		return dialRaw(cfg, addr)
	}
	ccfg := transport.ClientConfig{Config: transport.Config{SocketReceiveBuffer: cfg.RcvBuf, ReadBufferSize: max(64<<10, cfg.Size)},
		ReceiveTimeout: cfg.echoTimeout()}
	if cfg.UDP && !cfg.UDPConn {
		ccfg.LocalAddr = "127.0.0.1:0" // a bound socket sending with send-to, like NetLoadTest's default
	}
	var hooks transport.Hooks
	var ev *lifenetEventConn
	switch cfg.RecvMode {
	case "event":
		ev = &lifenetEventConn{}
		hooks.OnReceive = ev.onReceive
	case "async":
		ccfg.Mode = transport.ReceivePull // Receive waits on the client's queue
	default:
		ccfg.Mode = transport.ReceiveSync // Receive reads on the caller's goroutine
	}
	c, err := transport.Dial(ctx, cfg.protocol(), addr, ccfg, hooks)
	if err != nil {
		return nil, err
	}
	if ev != nil {
		ev.lifenetConn = lifenetConn{c: c}
		return ev, nil
	}
	return &lifenetConn{c: c}, nil
}

// lifenetConn drives a transport.Client in pull or sync mode.
type lifenetConn struct {
	c *transport.Client
}

// lifenetEventConn is a client in event mode: what it receives goes to the
// handler set with onBytes, on the client's receive goroutine, as
// NetLoadTest's Received handler counts and chains its ping-pong.
type lifenetEventConn struct {
	lifenetConn
	handler atomic.Pointer[func(n int)]
}

func (l *lifenetEventConn) onReceive(_ *transport.Session, p *packet.Packet) {
	if h := l.handler.Load(); h != nil {
		(*h)(p.Len())
	}
}

// onBytes sets the handler (nil: drop what arrives).
func (l *lifenetEventConn) onBytes(h func(n int)) {
	if h == nil {
		l.handler.Store(nil)
		return
	}
	l.handler.Store(&h)
}

func (l *lifenetEventConn) recv(context.Context) (int, error) {
	return 0, errors.New("loadtest: an event-mode connection delivers through onBytes")
}

// ended reports why the connection closed, or nil while it is open.
func (l *lifenetEventConn) ended() error {
	if r := l.c.Session().Reason(); r != transport.ReasonNone {
		return fmt.Errorf("connection closed: %v", r)
	}
	return nil
}

// send writes b without copying it: the load payload is never modified,
// so the caller's memory can go to the socket as it is (as the raw client
// writes its buffer).
func (l *lifenetConn) send(b []byte) error { return l.c.Send(packet.Wrap(b)) }

func (l *lifenetConn) recv(ctx context.Context) (int, error) {
	p, err := l.c.Receive(ctx) // ReceiveTimeout bounds it
	if err != nil {
		return 0, err
	}
	n := p.Total()
	p.Release()
	return n, nil
}

func (l *lifenetConn) queued() int { return l.c.Session().QueuedBytes() }

func (l *lifenetConn) local() net.Addr { return l.c.Session().LocalAddr() }

func (l *lifenetConn) close() { l.c.Close() }

// rawConn is the std-net baseline client.
type rawConn struct {
	conn net.Conn
	udp  *net.UDPConn // unconnected UDP: send-to
	to   netip.AddrPort
	buf  []byte
	// timeout bounds each read, as the lifenet client's ReceiveTimeout.
	timeout time.Duration
}

func dialRaw(cfg *Config, addr string) (clientConn, error) {
	r := &rawConn{buf: make([]byte, max(64<<10, cfg.Size)), timeout: cfg.echoTimeout()}
	if cfg.UDP && !cfg.UDPConn {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, err
		}
		u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, err
		}
		r.udp, r.to, r.conn = u, ap, u
	} else {
		c, err := net.Dial(cfg.protocol(), addr)
		if err != nil {
			return nil, err
		}
		r.conn = c
	}
	if cfg.RcvBuf > 0 {
		if s, ok := r.conn.(interface{ SetReadBuffer(int) error }); ok {
			s.SetReadBuffer(cfg.RcvBuf)
		}
	}
	return r, nil
}

func (r *rawConn) send(b []byte) error {
	if r.udp != nil {
		_, err := r.udp.WriteToUDPAddrPort(b, r.to)
		return err
	}
	_, err := r.conn.Write(b)
	return err
}

func (r *rawConn) recv(ctx context.Context) (int, error) {
	d, ok := ctx.Deadline()
	if r.timeout > 0 {
		if t := time.Now().Add(r.timeout); !ok || t.Before(d) {
			d, ok = t, true
		}
	}
	if ok {
		r.conn.SetReadDeadline(d)
	}
	n, err := r.conn.Read(r.buf)
	if err != nil && errors.Is(err, net.ErrClosed) {
		return n, context.Canceled
	}
	return n, err
}

func (r *rawConn) queued() int { return 0 }

func (r *rawConn) local() net.Addr { return r.conn.LocalAddr() }

func (r *rawConn) close() { r.conn.Close() }
