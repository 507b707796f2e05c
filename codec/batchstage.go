package codec

import (
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Requests staged in a batch. Inside [Conn.Batch], an asynchronous SRMP
// request whose payload is copied (under copyBelow bytes), on a
// connection whose SRMP stage writes straight to its session, is framed
// into the batch's staging buffer by registerStaged, under the matcher's
// lock that claiming its sequence number takes anyway, instead of being
// sent on its own: one lock per request instead of two (a lock costs as
// much as the rest of framing a small request). The staged frames go to
// the session in the order their numbers were given out, inside the
// transport's batch (so in its one write):
//
//   - when the batch ends;
//   - when stageFlushAt bytes are staged;
//   - before any other write of the connection ([Conn.Write],
//     [Conn.Enqueue], a reply, a request that is not staged), so that a
//     goroutine's writes keep their order.
//
// A write straight to the session (Conn.Session) is not ordered after
// them. A failed write of staged frames closes the session: their
// requests fail through their callbacks, as any request in flight does.

// stageCap is a staging buffer's size, and stageFlushAt how many staged
// bytes are handed to the session before the batch ends: a bound on the
// buffer, not a wait. The request that passes it still fits.
const (
	stageCap     = 16 << 10
	stageFlushAt = stageCap - srmpHeaderLen - copyBelow
)

// batchStage is a connection's staging of batched requests, made by its
// first Batch and kept. Between batches it holds no buffer: the staged
// packet is the session's once handed over, and written from as it is.
type batchStage struct {
	out      *transport.Session // where staged frames go
	batching atomic.Int32       // Batch calls running; taken down under the matcher's mu, with the last take of staged
	staged   *packet.Packet     // frames not yet handed to out, the first n bytes; nil: none. Under the matcher's mu
	n        int

	flushMu sync.Mutex // one hand-over at a time, so that staged frames reach out in order
}

// stageLocked frames a request with flag, seq and body after the staged
// bytes and returns how many are staged. Called with the matcher's mu
// held.
func (bs *batchStage) stageLocked(flag, seq uint8, body []byte) int {
	end := bs.n + srmpHeaderLen + len(body)
	switch {
	case bs.staged == nil:
		bs.staged = packet.Get(stageCap)
	case end > bs.staged.Len(): // others staged past stageFlushAt before its hand-over took them
		bigger := packet.Get(2 * end)
		copy(bigger.Bytes(), bs.staged.Bytes()[:bs.n])
		bs.staged.Release()
		bs.staged = bigger
	}
	b := bs.staged.Bytes()[bs.n:end]
	putSRMPHeader(b, KindRequest, flag, seq, len(body))
	copy(b[srmpHeaderLen:], body)
	bs.n = end
	return end
}

// startBatch counts a Batch that stages requests for out, making the
// staging with the first.
func (m *matcher) startBatch(out *transport.Session) {
	bs := m.batch.Load()
	if bs == nil {
		bs = &batchStage{out: out}
		if !m.batch.CompareAndSwap(nil, bs) {
			bs = m.batch.Load()
		}
	}
	bs.batching.Add(1)
}

// flushStaged hands the staged frames to the session, and for a Batch
// that ends (end) counts it out in the same step, so that no request is
// staged after the last batch's final hand-over. It returns the send's
// error: the session's close, which fails the requests.
func (m *matcher) flushStaged(end bool) error {
	bs := m.batch.Load()
	if bs == nil {
		return nil
	}
	bs.flushMu.Lock()
	defer bs.flushMu.Unlock()
	m.mu.Lock()
	if end {
		bs.batching.Add(-1)
	}
	p, n := bs.staged, bs.n
	bs.staged, bs.n = nil, 0
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	p.Resize(n)
	return bs.out.Send(p)
}

// stagesRequests reports whether c's asynchronous SRMP requests may be
// staged inside Batch: its SRMP stage writes straight to a stream
// session, and a receive goroutine reads (a ReceiveSync client refuses
// asynchronous requests).
func (c *Conn) stagesRequests() bool {
	if c.chain.match != MatchSRMP || c.chain.Datagram || c.syncLead() != nil {
		return false
	}
	ctx := c.srmpCtx()
	return ctx != nil && ctx.headSession() != nil
}

// flushBatch hands a running batch's staged requests to the session
// before another write of c (see batchStage): an inlined check unless a
// Batch runs.
func (c *Conn) flushBatch() {
	if c.chain.batches.Load() != 0 {
		c.flushStaged()
	}
}

// flushStaged is flushBatch while a Batch runs: kept out of line, so that
// flushBatch inlines into every write.
//
//go:noinline
func (c *Conn) flushStaged() {
	if m := c.m.Load(); m != nil {
		m.flushStaged(false) // a failed write closes the session, and the write that follows fails with it
	}
}
