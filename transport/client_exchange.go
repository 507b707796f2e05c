package transport

import (
	"context"

	"github.com/lifenet/lifenet/packet"
)

// Exchanger is the request of an exchange ([Client.Exchange]): what to do
// with bytes that arrived before it was sent, and how to send it.
type Exchanger interface {
	// Stale gets, borrowed for the call, bytes the connection had
	// received before the request was sent: nobody asked for them.
	Stale(p *packet.Packet)
	// Send sends the request. A failed send ends the exchange with its
	// error.
	Send() error
}

// exchangeStale bounds the reads of stale bytes an exchange makes before
// it sends, so that a peer that keeps sending cannot hold a request back.
const exchangeStale = 16

// Exchange is a [ReceiveSync] caller's request and the wait for its
// answer in one step: it hands to x.Stale what the connection has already
// received and nobody has read (bytes that arrived before the request
// existed: an unsolicited or duplicated reply, which must not be taken for
// its answer), calls x.Send, and returns the next bytes to arrive as
// [Client.ReceiveBorrowed] does: a view of the read buffer, valid until
// the next receive on the client. Where the socket can be read without
// waiting (a TCP or Unix connection on Linux and macOS) the first look
// for stale bytes is also the read that arms the wait for the answer, so
// the exchange costs one system call fewer than ReceiveBuffered, a send
// and ReceiveBorrowed, which it does elsewhere.
//
// Errors are Receive's, or Send's when it fails: Exchange then returns
// Send's error as it is. An exchange that fails before it calls Send (the
// session has ended, ctx is done, a Wake came first) returns without
// calling it. At most 16 reads of stale bytes are made before Send. Safe
// for concurrent use with the client's other methods, which wait for it
// (Stale and Send run with the client's receive lock held: they must not
// receive on the client).
func (c *Client) Exchange(ctx context.Context, x Exchanger) (*packet.Packet, error) {
	if c.sync == nil {
		return nil, errNotSync
	}
	if p, done, err := c.exchangeNow(ctx, x); done {
		return p, err
	}
	for range exchangeStale {
		p, _ := c.ReceiveBuffered() // an error shows again in the receive
		if p == nil {
			break
		}
		x.Stale(p)
		p.Release()
	}
	if err := x.Send(); err != nil {
		return nil, err
	}
	return c.ReceiveBorrowed(ctx)
}
