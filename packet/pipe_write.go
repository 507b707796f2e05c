package packet

import "context"

// Append moves pkt (and its chain) into the pipe without copying, then
// waits while the pipe is paused, like Flush. Ownership moves even when
// Append fails: if the pipe is closed, pkt is released.
func (p *Pipe) Append(ctx context.Context, pkt *Packet) error {
	p.mu.Lock()
	if err := p.writeErr(); err != nil {
		p.mu.Unlock()
		pkt.Release()
		return err
	}
	for s := pkt; s != nil; {
		next := s.next
		s.next = nil
		if len(s.buf) == 0 {
			s.releaseSegment()
		} else {
			p.segs = append(p.segs, s)
			p.size += len(s.buf)
			p.wtail = false
		}
		s = next
	}
	p.updatePause()
	p.mu.Unlock()
	signal(p.readable)
	return p.Flush(ctx)
}

// Write copies b into the pipe, packing small writes into shared pooled
// buffers, then waits while the pipe is paused, like Flush. It returns the
// number of bytes copied, which is len(b) unless the pipe is closed.
func (p *Pipe) Write(ctx context.Context, b []byte) (int, error) {
	p.mu.Lock()
	if err := p.writeErr(); err != nil {
		p.mu.Unlock()
		return 0, err
	}
	n := len(b)
	for len(b) > 0 {
		t := p.writeTail(len(b))
		k := copy(t.buf[len(t.buf):cap(t.buf)], b)
		t.buf = t.buf[:len(t.buf)+k]
		b = b[k:]
	}
	p.size += n
	p.updatePause()
	p.mu.Unlock()
	signal(p.readable)
	return n, p.Flush(ctx)
}

// writeTail returns the pipe's write buffer with room for at least one byte,
// starting a new one (sized for hint bytes) when needed. Bytes past the
// tail's length are seen by no handle, so they may be written in place even
// when a frame taken from the tail shares its storage. Called with p.mu held.
func (p *Pipe) writeTail(hint int) *Packet {
	if p.wtail {
		if t := p.segs[len(p.segs)-1]; len(t.buf) < cap(t.buf) {
			return t
		}
	}
	t := Get(max(hint, writeChunk))
	t.buf = t.buf[:0]
	p.segs = append(p.segs, t)
	p.wtail = true
	return t
}

// Flush waits while the pipe is paused (writer back-pressure). It returns
// at once when the pipe is not paused, [ErrClosedPipe] if the reader closed
// the pipe, or ctx's error if ctx ends first.
func (p *Pipe) Flush(ctx context.Context) error {
	for p.paused.Load() {
		select {
		case <-p.writable:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	closed := p.rclosed
	p.mu.Unlock()
	if closed {
		return ErrClosedPipe
	}
	return nil
}

// writeErr is why a write cannot proceed, or nil. Called with p.mu held.
func (p *Pipe) writeErr() error {
	switch {
	case p.rclosed:
		return ErrClosedPipe
	case p.werr != nil:
		return ErrWriteAfterClose
	}
	return nil
}
