package transport

import (
	"crypto/tls"
	"net"

	"github.com/lifenet/lifenet/packet"
)

// tcpSocket is what the transport sets on a TCP connection: a
// *net.TCPConn's methods, which a server's fdConn (Linux) has too.
type tcpSocket interface {
	SetNoDelay(bool) error
	SetKeepAliveConfig(net.KeepAliveConfig) error
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
}

// tcpOf returns the TCP connection c is (or that runs under c's TLS), or nil.
func tcpOf(c net.Conn) tcpSocket {
	if t, isTLS := c.(*tls.Conn); isTLS {
		c = t.NetConn()
	}
	switch tc := c.(type) {
	case *net.TCPConn:
		return tc
	case accepted:
		if tc.isTCP() {
			return tc
		}
	}
	return nil
}

// accepted is a server's connection accepted as a descriptor (fdConn,
// Linux): Unix or TCP, whose socket starts with the kernel's defaults.
type accepted interface {
	tcpSocket
	isTCP() bool
}

// tuneConn applies the socket settings of cfg to a TCP connection (or the
// TCP connection under TLS).
func tuneConn(c net.Conn, cfg *Config) {
	tc := tcpOf(c)
	if tc == nil {
		return
	}
	if _, fromAccept4 := tc.(accepted); !fromAccept4 || cfg.NoDelay == NoDelayOn {
		tc.SetNoDelay(cfg.NoDelay == NoDelayOn) // NoDelayAuto starts with Nagle on, which the net package turns off and accept4 leaves on
	}
	if cfg.KeepAlive > 0 {
		tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: cfg.KeepAlive, Interval: cfg.KeepAlive, Count: 3})
	}
	if cfg.SocketReceiveBuffer > 0 {
		tc.SetReadBuffer(cfg.SocketReceiveBuffer)
	}
	if cfg.SocketSendBuffer > 0 {
		tc.SetWriteBuffer(cfg.SocketSendBuffer)
	}
}

// fitLargeMessage adapts the socket to the batch's largest message: SO_SNDBUF
// grows to fit it, and [NoDelayAuto] turns Nagle off at AutoNoDelaySize.
func (w *streamSender) fitLargeMessage(batch []*packet.Packet) {
	m := largest(batch)
	w.fitSendBuffer(m)
	if w.nagle && m >= AutoNoDelaySize {
		w.nagle = false
		w.tcp.SetNoDelay(true)
	}
}

// fitSendBuffer grows SO_SNDBUF towards the size of a message that does
// not fit it (NewLife's TuneSendBufferSize): a message larger than the
// kernel buffer would otherwise need several wake-ups to leave.
func (w *streamSender) fitSendBuffer(message int) {
	if message <= w.sndbuf || w.sndbuf == 0 || w.sndbuf >= w.sndbufMax {
		return
	}
	size := min(message, w.sndbufMax)
	if err := w.tcp.SetWriteBuffer(size); err == nil {
		w.sndbuf = size
	} else {
		w.sndbufMax = w.sndbuf // the socket refuses: stop trying
	}
}

// largest returns the size of the largest message in batch.
func largest(batch []*packet.Packet) int {
	m := 0
	for _, p := range batch {
		m = max(m, p.Total())
	}
	return m
}
