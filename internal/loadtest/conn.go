package loadtest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
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
	if cfg.Impl == "raw" {
		return dialRaw(cfg, addr)
	}
	ccfg := transport.ClientConfig{Config: transport.Config{SocketReceiveBuffer: cfg.RcvBuf, ReadBufferSize: max(64<<10, cfg.Size)},
		ReceiveTimeout: cfg.echoTimeout()}
	if cfg.UDP && !cfg.UDPConn {
		ccfg.LocalAddr = "127.0.0.1:0" // a bound socket sending with send-to, like NetLoadTest's default
	}
	lc := &lifenetConn{done: make(chan struct{}), timeout: cfg.echoTimeout()}
	var hooks transport.Hooks
	switch cfg.RecvMode {
	case "event":
		lc.events = make(chan int, 1024)
		hooks.OnReceive = func(_ *transport.Session, p *packet.Packet) {
			select {
			case lc.events <- p.Len():
			case <-lc.done:
			}
		}
	case "async":
		ccfg.Mode = transport.ReceivePull // Receive waits on the client's queue
	default:
		ccfg.Mode = transport.ReceiveSync // Receive reads on the caller's goroutine
	}
	c, err := transport.Dial(ctx, cfg.protocol(), addr, ccfg, hooks)
	if err != nil {
		return nil, err
	}
	lc.c = c
	return lc, nil
}

// lifenetConn drives a transport.Client in one of its receive modes.
type lifenetConn struct {
	c       *transport.Client
	events  chan int // event mode: bytes per OnReceive
	timeout time.Duration
	timer   *time.Timer // event mode's receive timeout, reused
	done    chan struct{}
	once    sync.Once
}

// errEchoTimeout is an event-mode wait that outlasted the echo timeout.
var errEchoTimeout = errors.New("loadtest: no echo within the timeout")

// send writes b without copying it: the load payload is never modified,
// so the caller's memory can go to the socket as it is (as the raw client
// writes its buffer).
func (l *lifenetConn) send(b []byte) error { return l.c.Send(packet.Wrap(b)) }

func (l *lifenetConn) recv(ctx context.Context) (int, error) {
	if l.events != nil {
		return l.recvEvent(ctx)
	}
	p, err := l.c.Receive(ctx) // pull or sync mode; ReceiveTimeout bounds it
	if err != nil {
		return 0, err
	}
	n := p.Total()
	p.Release()
	return n, nil
}

// recvEvent waits for the next OnReceive's byte count.
func (l *lifenetConn) recvEvent(ctx context.Context) (int, error) {
	var expired <-chan time.Time
	if l.timeout > 0 {
		if l.timer == nil {
			l.timer = time.NewTimer(l.timeout)
		} else {
			l.timer.Reset(l.timeout)
		}
		defer l.timer.Stop()
		expired = l.timer.C
	}
	select {
	case n := <-l.events:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-expired:
		return 0, errEchoTimeout
	}
}

func (l *lifenetConn) queued() int { return l.c.Session().QueuedBytes() }

func (l *lifenetConn) local() net.Addr { return l.c.Session().LocalAddr() }

func (l *lifenetConn) close() {
	l.once.Do(func() {
		close(l.done)
		l.c.Close()
	})
}

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
