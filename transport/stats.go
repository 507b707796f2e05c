package transport

import "sync/atomic"

// ReasonCounts counts sessions by the [Reason] they ended with: index it
// with a Reason, or range over it.
type ReasonCounts [numReasons]uint64

// Stats is a snapshot of a server's or client's counters.
type Stats struct {
	Accepted  uint64 // sessions opened (TCP/Unix accepts, new UDP peers, client connects)
	Active    int64  // sessions open now
	MaxActive int64  // most sessions open at once

	Closed ReasonCounts // sessions ended, by Reason

	BytesIn, BytesOut       uint64 // payload bytes received and written
	MessagesIn, MessagesOut uint64 // reads/datagrams delivered; messages written (one per Send or SendBytes)

	DatagramsDropped   uint64 // UDP datagrams dropped (no session could take them, or the OS cut them short)
	SendQueueOverflows uint64 // sessions closed as slow consumers: a full send queue without progress, or Enqueue past twice its room

	// Servers only (a client's are 0):
	UDPPeers        int64 // UDP virtual sessions open now (counted in Active too)
	ReadBufferBytes int64 // pooled receive buffers held now: by stream sessions (parked ones hold none; a read loop starts with FirstReadSize, ReadBufferSize once a read fills that), and UDPReadBatch × 64 KiB per UDP socket
	Parked          int64 // stream sessions parked now: idle, with no goroutine or read buffer (Config.ParkAfter)
}

// QueueStats is the state of send queues at one moment: of one session
// ([Session.SendQueue]) or summed over a server's ([Server.SendQueues]).
type QueueStats struct {
	Messages int   // messages queued and not yet taken by a write (one per Send, SendBytes, Enqueue call)
	Bytes    int64 // bytes not yet written: queued, and left of the writes in progress
	Waiting  int   // senders waiting for room in a full queue (Send, SendContext)
}

// traffic counts one session's bytes and messages. Each session has its
// own, so receive loops on different cores never write a shared cache line
// per message; [Stats] sums the live sessions and the retired totals.
type traffic struct {
	bytesIn, messagesIn, bytesOut, messagesOut atomic.Uint64
}

func (t *traffic) addTo(s *Stats) {
	s.BytesIn += t.bytesIn.Load()
	s.MessagesIn += t.messagesIn.Load()
	s.BytesOut += t.bytesOut.Load()
	s.MessagesOut += t.messagesOut.Load()
}

func (t *traffic) absorb(o *traffic) {
	t.bytesIn.Add(o.bytesIn.Load())
	t.messagesIn.Add(o.messagesIn.Load())
	t.bytesOut.Add(o.bytesOut.Load())
	t.messagesOut.Add(o.messagesOut.Load())
}

// counters are the live, atomically updated form of [Stats], apart from the
// traffic of live sessions.
type counters struct {
	accepted, droppedDatagrams, overflows atomic.Uint64
	active, maxActive                     atomic.Int64
	readBuffers                           atomic.Int64 // bytes of the receive buffers stream sessions hold now
	closed                                [numReasons]atomic.Uint64
	retired                               traffic // traffic of ended sessions
}

func (c *counters) opened() {
	c.accepted.Add(1)
	n := c.active.Add(1)
	for {
		m := c.maxActive.Load()
		if n <= m || c.maxActive.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *counters) ended(r Reason) {
	c.active.Add(-1)
	c.closed[r].Add(1)
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Accepted:           c.accepted.Load(),
		Active:             c.active.Load(),
		MaxActive:          c.maxActive.Load(),
		DatagramsDropped:   c.droppedDatagrams.Load(),
		SendQueueOverflows: c.overflows.Load(),
	}
	for i := range s.Closed {
		s.Closed[i] = c.closed[i].Load()
	}
	c.retired.addTo(&s)
	return s
}
