package transport

import (
	"github.com/lifenet/lifenet/packet"
)

// ReceiveBuffered returns, without waiting, what a [ReceiveSync] client's
// connection has received and nobody has read yet, or nil when there is
// nothing. A caller about to send a request uses it to consume bytes that
// arrived before the request existed (an unsolicited or duplicated reply),
// so that they cannot be taken for the request's reply.
//
// It returns nil at once when another Receive is in progress (that reader
// consumes what arrives), when the client is not in ReceiveSync mode (or
// StartReceiving ended it), and
// where the socket cannot be read without waiting: TLS connections and
// systems other than Linux and macOS. The packet is the caller's to
// release. A connection that has ended gives its close error, like
// Receive. It costs one system call. Safe for concurrent use.
func (c *Client) ReceiveBuffered() (*packet.Packet, error) {
	r := c.sync
	if r == nil || !r.mu.TryLock() {
		return nil, nil
	}
	defer r.mu.Unlock()
	if r.handedOff.Load() {
		return nil, nil // the receive goroutine reads
	}
	r.loan.End() // the previous borrowed view, if any, is over
	s := c.sess.Load()
	if s.Reason() != ReasonNone {
		r.end(s)
		return nil, s.closedErr()
	}
	n, read, err := r.now.read(s, r.buffer(c.cfg.ReadBufferSize).Bytes())
	switch {
	case !read:
		return nil, nil
	case n > 0:
		return r.take(s, n), nil
	case err == nil: // an empty read: the peer ended the session
		s.closeWith(ReasonPeerClosed, nil)
	default:
		s.closeWith(s.readReason(err, true), causeOf(err))
	}
	r.end(s)
	return nil, s.closedErr()
}
