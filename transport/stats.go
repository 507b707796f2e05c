package transport

import "sync/atomic"

// NumReasons is the number of Reason values, for indexing Stats.Closed.
const NumReasons = int(numReasons)

// Stats is a snapshot of a server's or client's counters.
type Stats struct {
	Accepted  uint64 // sessions opened (TCP/Unix accepts, new UDP peers, client connects)
	Active    int64  // sessions open now
	MaxActive int64  // most sessions open at once

	Closed [NumReasons]uint64 // sessions ended, by Reason

	BytesIn, BytesOut       uint64 // payload bytes received and written
	MessagesIn, MessagesOut uint64 // reads/datagrams delivered, packets written

	DatagramsDropped   uint64 // UDP datagrams dropped (peer limit, closed session, queue full)
	SendQueueOverflows uint64 // sends refused because a send queue was full
}

// counters are the live, atomically updated form of Stats. Fields updated on
// every read or write sit on their own cache lines so that receive loops on
// different cores do not contend.
type counters struct {
	accepted, droppedDatagrams, overflows atomic.Uint64
	active, maxActive                     atomic.Int64
	closed                                [NumReasons]atomic.Uint64

	_          [64]byte
	bytesIn    atomic.Uint64
	messagesIn atomic.Uint64
	_          [48]byte
	bytesOut   atomic.Uint64
	msgsOut    atomic.Uint64
	_          [48]byte
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
		BytesIn:            c.bytesIn.Load(),
		BytesOut:           c.bytesOut.Load(),
		MessagesIn:         c.messagesIn.Load(),
		MessagesOut:        c.msgsOut.Load(),
		DatagramsDropped:   c.droppedDatagrams.Load(),
		SendQueueOverflows: c.overflows.Load(),
	}
	for i := range s.Closed {
		s.Closed[i] = c.closed[i].Load()
	}
	return s
}
