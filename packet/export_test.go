package packet

import "sync"

// RecycleCounter counts, per storage owner, how often it was recycled.
type RecycleCounter struct {
	mu     sync.Mutex
	counts map[*owner]int
}

// CountRecycles installs a recycle hook for the duration of a test; call
// the returned function to remove it.
func CountRecycles() (*RecycleCounter, func()) {
	c := &RecycleCounter{counts: map[*owner]int{}}
	recycleHook = func(o *owner) {
		c.mu.Lock()
		c.counts[o]++
		c.mu.Unlock()
	}
	return c, func() { recycleHook = nil }
}

// Of returns how often the storage under p has been recycled so far.
func (c *RecycleCounter) Of(key any) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key.(*owner)]
}

// Total returns the number of recycle events seen.
func (c *RecycleCounter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// OwnerOf returns an opaque key for p's storage.
func OwnerOf(p *Packet) any { return p.o }

// ReleaseOwner drops one reference from p's storage directly, bypassing the
// handle, to provoke a reference-count underflow.
func ReleaseOwner(p *Packet) { p.o.release() }
