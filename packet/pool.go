package packet

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/internal/pooltrack"
)

// Size classes: one pool per power of two from [MinPooled] to MaxPooled.
const (
	// MinPooled is the smallest pooled buffer; smaller requests round up.
	MinPooled = 1 << minShift
	// MaxPooled is the largest pooled buffer; larger requests are plain
	// allocations that are never pooled.
	MaxPooled = 1 << maxShift

	minShift   = 6
	maxShift   = 22
	numClasses = maxShift - minShift + 1
	unpooled   = -1
)

// poison fills freed storage in lifenet_debug builds so that a stale read
// shows an obvious pattern.
const poison = 0xDE

// owner is the storage shared by every handle that views it.
type owner struct {
	buf   []byte // full storage, len == cap
	refs  atomic.Int32
	class int8 // index into classPools, or unpooled
	// home is the handle Get returns with this storage (outside debug
	// builds): it comes from the pool and goes back to it with the
	// storage, one pool round trip for both. Other handles (Slice, Share,
	// Wrap) come from viewPool. The storage is pooled again only once every
	// handle, home included, is released, so home is free by then.
	home Packet
	// homeMoved: home left this storage (Write grew it into another), so
	// its memory is in use elsewhere: this owner is never pooled again.
	homeMoved bool
}

var classPools [numClasses]sync.Pool

// recycleHook, when set by a test, sees every owner whose last reference
// was released.
var recycleHook func(*owner)

var viewPool = sync.Pool{New: func() any { return new(Packet) }}

// classOf returns the size class that holds n bytes, or unpooled.
func classOf(n int) int {
	if n > MaxPooled {
		return unpooled
	}
	if n <= MinPooled {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// newOwner returns storage of at least n bytes with one reference.
func newOwner(n int) *owner {
	c := classOf(n)
	var o *owner
	if c == unpooled {
		o = &owner{buf: make([]byte, n), class: unpooled}
	} else if v := classPools[c].Get(); v != nil {
		o = v.(*owner)
	} else {
		o = &owner{buf: make([]byte, 1<<(c+minShift)), class: int8(c)}
	}
	o.refs.Store(1)
	o.homeMoved = false
	if pooltrack.Enabled() {
		pooltrack.Track(o, len(o.buf), 1)
	}
	return o
}

// retain adds a reference for a new handle.
func (o *owner) retain() {
	if o.refs.Add(1) <= 1 {
		panic(ErrOverRelease)
	}
}

// release drops one reference and recycles the storage after the last.
func (o *owner) release() {
	switch r := o.refs.Add(-1); {
	case r > 0:
		return
	case r < 0:
		panic(ErrOverRelease)
	}
	if pooltrack.Enabled() {
		pooltrack.Untrack(o)
	}
	if recycleHook != nil {
		recycleHook(o)
	}
	if debug {
		fillPoison(o.buf)
	}
	if o.class != unpooled && !o.homeMoved {
		classPools[o.class].Put(o)
	}
}

// abandon gives the storage up without recycling it (Detach).
func (o *owner) abandon() {
	if pooltrack.Enabled() {
		pooltrack.Untrack(o)
	}
	o.refs.Store(0)
}

// homeOf returns the handle for new storage o: its home, or outside the
// owner in debug builds, whose handles are never reused (a stale pointer
// keeps its released state).
func homeOf(o *owner) *Packet {
	if debug {
		return new(Packet)
	}
	return &o.home
}

// isHome reports whether p is its owner's home handle.
func (p *Packet) isHome() bool { return p.o != nil && p == &p.o.home }

// newView returns an empty handle.
func newView() *Packet {
	if debug {
		return new(Packet)
	}
	return viewPool.Get().(*Packet)
}

// freeView recycles a released handle. In debug builds handles are never
// reused, so a stale pointer keeps its released state forever.
func freeView(p *Packet) {
	if !debug {
		viewPool.Put(p)
	}
}

// fillPoison fills b with poison by doubling copies: a byte loop costs
// milliseconds per 64 KiB buffer under the race detector, which stalls
// tests that release many buffers at once.
func fillPoison(b []byte) {
	if len(b) == 0 {
		return
	}
	b[0] = poison
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
