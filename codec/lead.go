package codec

import (
	"context"

	"github.com/lifenet/lifenet/transport"
)

// lead lets the goroutines blocked in Request take turns reading the
// connection (leader/follower) on a client dialled in transport.ReceiveSync
// mode. There is no receive goroutine: the caller waiting for a reply reads
// the socket itself, so a serial request costs one wake-up, as a plain
// write-then-read loop does, instead of a hand-off from a receive goroutine.
//
// One waiter at a time holds the turn and reads; what it reads goes through
// the pipeline, which delivers every reply to its own waiter, so the others
// wait on their result channels and one of them takes the turn when the
// reader's reply has come. A request that times out is failed by the
// matcher's sweeper, which then wakes the reader (transport.Client.Wake) in
// case it was that request's own.
type lead struct {
	tc   *transport.Client
	turn chan struct{} // holds the one read turn while nobody reads
}

func newLead(tc *transport.Client) *lead {
	l := &lead{tc: tc, turn: make(chan struct{}, 1)}
	l.turn <- struct{}{}
	return l
}

// await waits for the reply on ch, reading the connection whenever it is
// this goroutine's turn.
func (l *lead) await(ctx context.Context, c *Conn, key int, ch chan result) (any, error) {
	for {
		select {
		case r := <-ch:
			return c.m.finish(key, ch, r)
		default:
		}
		select {
		case r := <-ch:
			return c.m.finish(key, ch, r)
		case <-ctx.Done():
			return c.m.abandon(ctx, key, ch)
		case <-l.turn:
		}
		l.readOnce(ctx, c, ch)
		l.turn <- struct{}{}
	}
}

// readOnce reads what the connection has and runs it through the
// pipeline, unless the reply came while this goroutine waited for the turn.
// A read that fails needs no handling here: ctx's end and a Wake are seen
// by await's loop, and a connection that ended has failed every pending
// request (OnClose closes the matcher).
func (l *lead) readOnce(ctx context.Context, c *Conn, ch chan result) {
	if len(ch) > 0 {
		return
	}
	p, err := l.tc.Receive(ctx)
	if err != nil {
		return
	}
	c.read(p)
	p.Release()
}

// drainReads bounds how many reads drain makes, so a peer that keeps
// sending cannot hold a request back.
const drainReads = 16

// drain runs what the connection has already received through the
// pipeline before a request is registered. Bytes that arrived before the
// request existed (a reply sent unasked at connect, a duplicated or late
// reply) then meet no pending request with their number and are dropped and
// counted as unknown, instead of waiting in the socket to be taken for the
// new request's reply. It reads only while the turn is free: a goroutine
// reading for others consumes such bytes as they come. A failed read needs
// no handling: the request then fails on its send.
func (l *lead) drain(c *Conn) {
	select {
	case <-l.turn:
	default:
		return
	}
	defer func() { l.turn <- struct{}{} }()
	for range drainReads {
		p, _ := l.tc.ReceiveBuffered()
		if p == nil {
			return
		}
		c.read(p)
		p.Release()
	}
}
