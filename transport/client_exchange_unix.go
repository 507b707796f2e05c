//go:build linux || darwin

package transport

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/lifenet/lifenet/packet"
)

// exchange is the state of a [Client.Exchange] in progress on a socket read
// without waiting: the read step runs inside RawConn.Read, whose first call
// comes after the runtime's poller is armed for the wait, so a look for
// stale bytes that finds none is also the read before the wait for the
// answer. The step and its state are kept on the reader, made once, so an
// exchange allocates nothing. The syncReader's mu guards it.
type exchange struct {
	step  func(fd uintptr) bool
	x     Exchanger
	r     *syncReader
	s     *Session
	size  int   // the read buffer's size
	stale int   // reads of stale bytes so far
	sent  bool  // Send was called
	serr  error // Send's error
	n     int   // bytes read after Send
	err   error // the read's error
}

// exchangeNow runs an exchange on a stream socket it can read without
// waiting; done is false where it cannot (a datagram socket, TLS), and
// Exchange then takes three steps.
func (c *Client) exchangeNow(ctx context.Context, x Exchanger) (p *packet.Packet, done bool, err error) {
	r, s := c.sync, c.sess.Load()
	if s.Datagram() || r.now.failed {
		return nil, false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock() // deferred: Stale and Send run the caller's code, which may panic
	if r.handedOff.Load() {
		return nil, true, errHandedOff
	}
	if r.now.raw == nil && !r.now.init(s) {
		return nil, false, nil
	}
	r.loan.End() // the previous borrowed view, if any, is over
	defer s.flags.And(^flagInExchange)
	n, err := r.exchange(ctx, c, x)
	if n > 0 {
		p = r.loan.Lend(r.buf, 0, n) // counted as received by the step
	}
	return p, true, err
}

// exchange is read for an exchange: the same checks and deadlines, then
// the read step (see exchange). The caller holds r.mu.
func (r *syncReader) exchange(ctx context.Context, c *Client, x Exchanger) (int, error) {
	s := c.sess.Load()
	if s.Reason() != ReasonNone {
		r.end(s)
		return 0, s.closedErr()
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !r.watch(ctx, s) {
		defer r.unwatch()
	}
	until, err := r.limit(ctx, s, c.cfg.ReceiveTimeout)
	if err != nil {
		return 0, err
	}
	if r.takeWoken() {
		return 0, ErrWoken
	}
	e := &r.ex
	if e.step == nil {
		e.step, e.r = e.readStep, r
	}
	e.x, e.s, e.size, e.stale, e.sent, e.serr, e.n, e.err = x, s, c.cfg.ReadBufferSize, 0, false, nil, 0, nil
	rerr := r.now.raw.Read(e.step)
	n, serr := e.n, e.serr
	if rerr == nil {
		rerr = e.err
	}
	e.x, e.s, e.serr, e.err = nil, nil, nil, nil
	switch {
	case serr != nil:
		return 0, serr
	case n > 0:
		return n, nil
	}
	return r.readEnded(ctx, s, until, rerr)
}

// readStep is the exchange's RawConn.Read function: it reads stale bytes
// and hands them over until there are none (or exchangeStale reads), then
// sends and asks to wait; called again once the socket is readable, it
// reads the answer's first bytes.
func (e *exchange) readStep(fd uintptr) bool {
	for {
		if !e.sent && e.stale == exchangeStale { // a peer that keeps sending: send anyway
			e.sent = true
			if e.serr = e.send(); e.serr != nil {
				return true
			}
		}
		buf := e.r.buffer(e.size)
		k, errno := recvNow(int(fd), buf.Bytes())
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			if e.sent {
				return false // wait for the answer
			}
			e.sent = true
			e.serr = e.send()
			return e.serr != nil || e.s.Reason() != ReasonNone // else wait for the answer
		case errno != 0:
			e.err = os.NewSyscallError("recvfrom", errno)
			return true
		case k == 0:
			e.err = io.EOF
			return true
		}
		e.s.received(k)
		if e.sent {
			e.n = k
			return true
		}
		e.stale++
		e.s.flags.Or(flagInExchange)
		e.x.Stale(e.r.loan.Lend(buf, 0, k))
		e.s.flags.And(^flagInExchange)
		e.r.loan.End()
		if e.s.Reason() != ReasonNone { // the pipeline ended the session: the read ends for its close
			e.err = net.ErrClosed
			return true
		}
	}
}

// send runs the exchanger's Send inside the read: a session it closes
// (a failed write) closes its connection on another goroutine, since
// the connection's Close waits for this read to end.
func (e *exchange) send() error {
	e.s.flags.Or(flagInExchange)
	err := e.x.Send()
	e.s.flags.And(^flagInExchange)
	return err
}
