package codec

import (
	"fmt"
	"sync"
)

// holds is what a chain's stages hold of incomplete units outside the
// framers (a gateway's partial HTTP request, a WebSocket frame being
// assembled), counted against the server's partial-bytes budget.
type holds struct {
	mu     sync.Mutex
	budget *budget // the server's; nil on a client, a chain built by NewChain, or a server with no cap
	bytes  []int   // by handler index; allocated at the first Hold
	ended  bool    // the chain closed: everything was given back, later holds count nothing
}

// Hold sets the bytes this context's handler holds of incomplete units
// (partial requests or frames it buffers itself, outside this package's
// framers) to n. The difference from the handler's previous hold is taken
// from, or given back to, the server's Options.MaxPartialBytes budget,
// the same one its framers' partial frames use, and [Server.PartialBytes]
// counts it. When an increase does not fit, Hold returns an error wrapping
// [ErrMemoryCap] and the previous hold stays; the stage should then drop
// the unit and end the connection, as a framer does. A decrease always
// succeeds; so does any Hold on a client's connection, on a chain built by
// [Pipeline.NewChain], or on a server whose cap is negative (none). A
// negative n is taken as 0.
//
// The chain gives back a handler's whole hold when the connection ends,
// after the handlers' Closed, so a stage need not call Hold(0) there;
// a Hold after the end counts nothing and returns nil.
//
// Concurrency: Hold is safe for concurrent use with the other contexts'
// Holds and with the connection's end. One handler's calls must not race
// each other, so that its hold is what it last set: make them from the
// handler's Read, or from another goroutine under the stage's own lock.
func (c *HandlerContext) Hold(n int) error {
	h := &c.chain.holds
	n = max(n, 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return nil
	}
	if h.bytes == nil {
		if n == 0 {
			return nil
		}
		h.bytes = make([]int, len(c.chain.handlers))
	}
	old := h.bytes[c.index]
	if n > old && !h.budget.take(n-old) {
		return fmt.Errorf("%w: a stage holding %d bytes asked for %d, past MaxPartialBytes %d (%d held by the server)",
			ErrMemoryCap, old, n, h.budget.limit, h.budget.used.Load())
	}
	h.budget.give(old - n)
	h.bytes[c.index] = n
	return nil
}

// release gives back every stage's hold when the chain ends.
func (h *holds) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	for i, n := range h.bytes {
		h.budget.give(n)
		h.bytes[i] = 0
	}
}
