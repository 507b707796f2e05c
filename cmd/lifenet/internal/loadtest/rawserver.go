package loadtest

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/internal/baseline"
)

// startRawServer runs the std-net baseline: for TCP the baseline's byte loop, or
// with --codec its per-message loop (each frame parsed and handed to the
// echo, or only counted with --oneway); for UDP a plain read/echo loop, or
// with --codec the baseline's datagram loop (each frame of a datagram answered
// by the same handlers, a datagram per reply).
func startRawServer(cfg *Config, addr string) (*echoServer, error) {
	var h baseline.Handler
	var f baseline.Format
	if cfg.Codec != "none" {
		var err error
		if f, err = baseline.ParseFormat(cfg.Codec); err != nil {
			return nil, err
		}
		if !cfg.OneWay {
			h = baseline.Echo(f)
		}
	}
	if !cfg.UDP {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		if cfg.RcvBuf > 0 {
			l = &rcvbufListener{l.(*net.TCPListener), cfg.RcvBuf}
		}
		var s *baseline.Server
		if cfg.Codec == "none" {
			s = baseline.Serve(l, !cfg.OneWay)
		} else {
			s = baseline.ServeFrames(l, f, h)
		}
		return &echoServer{addr: l.Addr(), bytes: s.Bytes.Load, open: s.Open.Load, close: s.Close}, nil
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	if cfg.RcvBuf > 0 {
		conn.SetReadBuffer(cfg.RcvBuf)
	}
	if cfg.Codec != "none" {
		s := baseline.ServeDatagrams(conn, f, h)
		return &echoServer{addr: s.Addr(), bytes: s.Bytes.Load, close: s.Close}, nil
	}
	var n atomic.Uint64 // one reading goroutine: the only writer, once per datagram
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 64<<10)
		for {
			k, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			n.Add(uint64(k))
			if !cfg.OneWay && k > 0 {
				conn.WriteToUDPAddrPort(buf[:k], from)
			}
		}
	})
	return &echoServer{addr: conn.LocalAddr(), bytes: n.Load, close: func() { conn.Close(); wg.Wait() }}, nil
}

// rcvbufListener sets SO_RCVBUF on accepted connections.
type rcvbufListener struct {
	*net.TCPListener
	size int
}

func (l *rcvbufListener) Accept() (net.Conn, error) {
	c, err := l.TCPListener.AcceptTCP()
	if err == nil {
		c.SetReadBuffer(l.size)
	}
	return c, err
}
