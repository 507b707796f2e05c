package packet

import (
	"fmt"
	"strings"
)

// Write appends b to the last segment of the chain, growing it through the
// pool when it lacks room or shares its storage with other handles (so
// appending never writes into bytes another view can see). It implements
// io.Writer and never fails.
func (p *Packet) Write(b []byte) (int, error) {
	p.check()
	p.owning()
	t := p
	for t.next != nil {
		t = t.next
	}
	old := len(t.buf)
	t.grow(len(b))
	copy(t.buf[old:], b)
	return len(b), nil
}

// grow lengthens this segment by k bytes, moving it to a larger pooled
// buffer when it cannot grow in place.
func (p *Packet) grow(k int) {
	n := len(p.buf) + k
	if n <= cap(p.buf) && (p.o == nil || p.o.refs.Load() == 1) {
		p.buf = p.buf[:n]
		return
	}
	o := newOwner(max(n, 2*len(p.buf)))
	copy(o.buf, p.buf)
	old := p.o
	if p.isHome() {
		old.homeMoved = true // p lives on in old's memory: old must not be pooled again
	}
	p.o, p.start, p.buf = o, 0, o.buf[:n]
	if old != nil {
		old.release()
	}
}

// ExpandHeader makes room for a k-byte header in front of the packet and
// returns the packet that now starts with those k bytes (contents
// unspecified); ownership of p moves into the result. When p is the only
// handle to its storage and has k bytes of front slack (see
// [GetWithHeadroom]), the header reuses the slack and the result is p itself;
// otherwise a new pooled k-byte segment is chained in front of p. The payload
// is never copied.
func (p *Packet) ExpandHeader(k int) *Packet {
	p.check()
	p.owning()
	if k < 0 {
		panic(fmt.Sprintf("packet: ExpandHeader(%d): negative size", k))
	}
	if p.o != nil && p.start >= k && p.o.refs.Load() == 1 {
		p.start -= k
		p.buf = p.o.buf[p.start : p.start+len(p.buf)+k]
		return p
	}
	h := Get(k)
	h.next = p
	return h
}

// Clone returns a deep copy of the whole chain in one fitted pooled buffer.
// This is the "small frames copy" path: the copy frees the source's storage
// (typically a large receive buffer) for reuse at once.
func (p *Packet) Clone() *Packet {
	c := Get(p.Total())
	p.CopyTo(c.buf)
	return c
}

// Hex formats up to limit bytes of the chain as space-separated hex pairs for
// logs, noting how many bytes were left out; limit <= 0 formats them all.
func (p *Packet) Hex(limit int) string {
	total := p.Total()
	n := total
	if limit > 0 && limit < total {
		n = limit
	}
	var b strings.Builder
	b.Grow(3*n + 24)
	const digits = "0123456789abcdef"
	i := 0
	for s := p; s != nil && i < n; s = s.next {
		for _, c := range s.buf {
			if i == n {
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
			i++
		}
	}
	if n < total {
		fmt.Fprintf(&b, " …(+%d bytes)", total-n)
	}
	return b.String()
}
