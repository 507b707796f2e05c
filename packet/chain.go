package packet

import "fmt"

// Next returns the segment chained after this one, or nil. The chain is
// owned by its head: release the head, not the segments.
func (p *Packet) Next() *Packet {
	p.check()
	return p.next
}

// Chain appends q (and its chain) after the last segment of p, moving q's
// ownership into p's chain, and returns p. It panics if q is already part of
// p's chain, which would make a loop.
func (p *Packet) Chain(q *Packet) *Packet {
	p.check()
	q.check()
	p.owning()
	q.owning()
	t := p
	for {
		if t == q {
			panic("packet: Chain would create a loop")
		}
		if t.next == nil {
			break
		}
		t = t.next
	}
	for s := q; s != nil; s = s.next {
		if s == p {
			panic("packet: Chain would create a loop")
		}
	}
	t.next = q
	return p
}

// Total returns the number of bytes in the whole chain.
func (p *Packet) Total() int {
	p.check()
	n := 0
	for s := p; s != nil; s = s.next {
		n += len(s.buf)
	}
	return n
}

// NumSegments returns the number of segments in the chain.
func (p *Packet) NumSegments() int {
	p.check()
	n := 0
	for s := p; s != nil; s = s.next {
		n++
	}
	return n
}

// At returns the byte at index i of the chain. It panics if i is out of
// range.
func (p *Packet) At(i int) byte {
	s, j := p.locate(i)
	return s.buf[j]
}

// SetAt sets the byte at index i of the chain. It panics if i is out of
// range.
func (p *Packet) SetAt(i int, b byte) {
	s, j := p.locate(i)
	s.buf[j] = b
}

// locate finds the segment holding index i of the chain.
func (p *Packet) locate(i int) (*Packet, int) {
	p.check()
	if i >= 0 {
		for s := p; s != nil; s = s.next {
			if i < len(s.buf) {
				return s, i
			}
			i -= len(s.buf)
		}
	}
	panic(fmt.Sprintf("packet: index %d out of range of %d bytes", i, p.Total()))
}

// CopyTo copies the chain's bytes into dst and returns how many it copied:
// min(len(dst), Total()).
func (p *Packet) CopyTo(dst []byte) int {
	p.check()
	n := 0
	for s := p; s != nil && n < len(dst); s = s.next {
		n += copy(dst[n:], s.buf)
	}
	return n
}

// AppendTo appends the chain's bytes to dst and returns the result.
func (p *Packet) AppendTo(dst []byte) []byte {
	p.check()
	for s := p; s != nil; s = s.next {
		dst = append(dst, s.buf...)
	}
	return dst
}

// AppendBuffers appends each segment's bytes to bufs, for a vectored write
// with net.Buffers. The slices alias the packet and are valid until it is
// released.
func (p *Packet) AppendBuffers(bufs [][]byte) [][]byte {
	p.check()
	for s := p; s != nil; s = s.next {
		if len(s.buf) > 0 {
			bufs = append(bufs, s.Bytes())
		}
	}
	return bufs
}
