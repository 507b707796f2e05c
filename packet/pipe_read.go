package packet

import (
	"context"
	"fmt"
)

// Segments is unconsumed pipe data as a list of byte slices, in order. It
// aliases the pipe's buffers and is valid until the reader's next call on
// the pipe.
type Segments [][]byte

// Len returns the total number of bytes.
func (s Segments) Len() int {
	n := 0
	for _, b := range s {
		n += len(b)
	}
	return n
}

// CopyTo copies the bytes into dst and returns how many it copied.
func (s Segments) CopyTo(dst []byte) int {
	n := 0
	for _, b := range s {
		if n == len(dst) {
			break
		}
		n += copy(dst[n:], b)
	}
	return n
}

// ReadResult is what a read sees: all unconsumed data, and whether the
// writer has finished (no more data will come).
type ReadResult struct {
	Data      Segments
	Completed bool
}

// Read waits until there are bytes the reader has not examined (see
// Advance), then returns all unconsumed data. When the writer has closed and
// nothing new is left it returns the remaining (examined) data with the
// writer's error, io.EOF for a clean close. If ctx ends first it returns
// ctx's error and the data stays in the pipe.
func (p *Pipe) Read(ctx context.Context) (ReadResult, error) {
	return p.read(ctx, 0)
}

// ReadAtLeast waits until at least min bytes are unconsumed, then returns
// them all; otherwise as Read.
func (p *Pipe) ReadAtLeast(ctx context.Context, min int) (ReadResult, error) {
	return p.read(ctx, max(min, 1))
}

func (p *Pipe) read(ctx context.Context, min int) (ReadResult, error) {
	p.mu.Lock()
	for {
		if p.rclosed {
			p.mu.Unlock()
			return ReadResult{}, ErrClosedPipe
		}
		if p.ready(min) {
			r := p.result()
			p.mu.Unlock()
			return r, nil
		}
		if p.werr != nil {
			r, err := p.result(), p.werr
			p.mu.Unlock()
			return r, err
		}
		// Nothing deliverable: a paused writer must go on, or neither side
		// could make progress.
		p.release()
		p.mu.Unlock()
		select {
		case <-p.readable:
		case <-ctx.Done():
			return ReadResult{}, ctx.Err()
		}
		p.mu.Lock()
	}
}

// ready reports whether a read for min bytes (0: any unexamined byte) can
// return. Called with p.mu held.
func (p *Pipe) ready(min int) bool {
	if min == 0 {
		return p.size > p.examined
	}
	return p.size >= min
}

// result builds the read result in the reused view. Called with p.mu held.
func (p *Pipe) result() ReadResult {
	p.view = p.view[:0]
	for _, s := range p.segs {
		if len(s.buf) > 0 {
			p.view = append(p.view, s.Bytes())
		}
	}
	return ReadResult{Data: p.view, Completed: p.werr != nil}
}

// Advance reports the reader's progress in bytes from the front of the data
// of the last read: consumed bytes are dropped (their buffers released), and
// the next Read waits until more than examined bytes (counted from the same
// front) are available, so a reader that needs more for a whole frame is not
// woken for nothing. It requires 0 <= consumed <= examined <= Len().
func (p *Pipe) Advance(consumed, examined int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rclosed {
		return ErrClosedPipe
	}
	if consumed < 0 || examined < consumed || examined > p.size {
		return fmt.Errorf("%w: consumed %d, examined %d of %d bytes", ErrAdvance, consumed, examined, p.size)
	}
	p.consume(consumed)
	p.examined = examined - consumed
	p.updatePause()
	return nil
}

// consume drops n bytes from the front. Called with p.mu held.
func (p *Pipe) consume(n int) {
	p.size -= n
	i := 0
	for ; n > 0; i++ {
		s := p.segs[i]
		if len(s.buf) > n {
			s.Skip(n)
			break
		}
		n -= len(s.buf)
		s.Release()
	}
	p.dropFront(i)
}

// TakeFrame cuts the first n unconsumed bytes out as an owned packet (whole
// buffers move, partial ones are shared, nothing is copied) and consumes
// them in the same step. It fails with [ErrShortPipe] if fewer than n bytes
// are unconsumed.
func (p *Pipe) TakeFrame(n int) (*Packet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rclosed {
		return nil, ErrClosedPipe
	}
	if n < 0 || n > p.size {
		return nil, fmt.Errorf("%w: frame of %d bytes, %d buffered", ErrShortPipe, n, p.size)
	}
	if n == 0 {
		return Wrap(nil), nil
	}
	var head, tail *Packet
	i, rem := 0, n
	for rem > 0 {
		s := p.segs[i]
		if len(s.buf) > rem {
			v := s.sub(0, rem)
			s.Skip(rem)
			s = v
		} else {
			i++
		}
		rem -= len(s.buf)
		if head == nil {
			head = s
		} else {
			tail.next = s
		}
		tail = s
	}
	p.dropFront(i)
	p.size -= n
	p.examined = max(p.examined-n, 0)
	p.updatePause()
	return head, nil
}
