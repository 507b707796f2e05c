package packet

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Pipe defaults (NewLife v12 [Pipe]).
const (
	// DefaultPauseThreshold is the unread byte count at which writers wait.
	DefaultPauseThreshold = 1 << 20
	// DefaultResumeThreshold is the unread byte count below which paused
	// writers continue.
	DefaultResumeThreshold = 512 << 10

	// writeChunk is the smallest buffer Write takes from the pool, so that
	// many small writes share one buffer.
	writeChunk = 4 << 10
)

// PipeConfig sets a [Pipe]'s back-pressure. Writers wait once the bytes the
// reader has not yet examined reach PauseThreshold and continue once they fall
// below ResumeThreshold (hysteresis). The zero value means the defaults;
// [NoPause] as PauseThreshold turns back-pressure off.
type PipeConfig struct {
	PauseThreshold  int // 0 means DefaultPauseThreshold; NoPause never pauses
	ResumeThreshold int // 0 means DefaultResumeThreshold, or half of a PauseThreshold below it; at most PauseThreshold
}

// NoPause as [PipeConfig.PauseThreshold] turns back-pressure off: writers
// never wait.
const NoPause = -1

// DefaultPipeConfig returns the defaults: pause at 1 MiB, resume below 512 KiB.
func DefaultPipeConfig() PipeConfig {
	return PipeConfig{PauseThreshold: DefaultPauseThreshold, ResumeThreshold: DefaultResumeThreshold}
}

// withDefaults fills the zero fields.
func (c PipeConfig) withDefaults() PipeConfig {
	if c.PauseThreshold == 0 {
		c.PauseThreshold = DefaultPauseThreshold
	}
	if c.ResumeThreshold == 0 && c.PauseThreshold > 0 {
		c.ResumeThreshold = min(DefaultResumeThreshold, c.PauseThreshold/2)
	}
	return c
}

// Validate reports whether the thresholds make sense; its errors wrap
// [ErrConfig].
func (c PipeConfig) Validate() error {
	c = c.withDefaults()
	if c.PauseThreshold < NoPause || c.ResumeThreshold < 0 {
		return fmt.Errorf("%w: pipe thresholds must not be negative (pause %d, resume %d)", ErrConfig, c.PauseThreshold, c.ResumeThreshold)
	}
	if c.PauseThreshold > 0 && c.ResumeThreshold > c.PauseThreshold {
		return fmt.Errorf("%w: pipe resume threshold %d is above pause threshold %d", ErrConfig, c.ResumeThreshold, c.PauseThreshold)
	}
	return nil
}

// Pipe is a byte pipe between one writer goroutine and one reader goroutine
// (NewLife v12 [Pipe]). The writer moves packets in (Append, zero copy) or
// copies bytes in (Write); the reader sees everything unconsumed as a list of
// segments (Read, ReadAtLeast), reports progress as byte counts (Advance), or
// cuts owned frames (TakeFrame). Back-pressure pauses the writer while too
// many bytes wait unread.
//
// Writer methods (Append, Write, Flush, CloseWrite) may be called from one
// goroutine at a time, reader methods (Read, ReadAtLeast, Advance,
// TakeFrame, CloseRead) from another; Len and Paused from anywhere.
//
// Pipe is for users building their own stream protocols who want NewLife
// v12's Pipe semantics: one goroutine feeding bytes in as they arrive,
// another parsing frames out, with the writer held back while the parser
// lags. Nothing in lifenet's own stack uses it: the transport's receive
// loop reads into one pooled buffer per connection and lends views of it
// to the handler on the reading goroutine (see package transport), and the
// codec keeps the bytes of an incomplete frame itself, so there is no
// second goroutine to hand bytes to.
type Pipe struct {
	pause, resume int

	mu       sync.Mutex
	segs     []*Packet // unconsumed data, front first; the pipe owns each
	size     int       // unconsumed bytes
	examined int       // leading unconsumed bytes the reader has examined
	wtail    bool      // the last segment is the pipe's write buffer and may grow in place
	werr     error     // set by CloseWrite: io.EOF or the writer's error
	rclosed  bool
	view     Segments // reused for each read result

	paused   atomic.Bool
	readable chan struct{}
	writable chan struct{}
}

// NewPipe returns an empty pipe with the given back-pressure settings.
func NewPipe(cfg PipeConfig) (*Pipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.PauseThreshold == NoPause {
		cfg.PauseThreshold, cfg.ResumeThreshold = 0, 0 // the pipe's 0: never pause
	}
	return &Pipe{
		pause:    cfg.PauseThreshold,
		resume:   cfg.ResumeThreshold,
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
	}, nil
}

// Len returns the number of unconsumed bytes.
func (p *Pipe) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size
}

// Paused reports whether writers are being held back.
func (p *Pipe) Paused() bool { return p.paused.Load() }

// signal wakes the waiter on ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// updatePause applies the hysteresis to the bytes not yet examined. Called
// with p.mu held.
func (p *Pipe) updatePause() {
	if p.pause <= 0 {
		return
	}
	pending := p.size - p.examined
	switch {
	case !p.paused.Load() && pending >= p.pause:
		p.paused.Store(true)
	case p.paused.Load() && pending < p.resume:
		p.release()
	}
}

// release lets paused writers go. Called with p.mu held.
func (p *Pipe) release() {
	if p.paused.Load() {
		p.paused.Store(false)
		signal(p.writable)
	}
}

// dropFront removes the first n segments from the list (their ownership has
// already been handed on or ended). Called with p.mu held.
func (p *Pipe) dropFront(n int) {
	if n == 0 {
		return
	}
	k := copy(p.segs, p.segs[n:])
	clear(p.segs[k:])
	p.segs = p.segs[:k]
	if k == 0 {
		p.wtail = false
	}
}

// CloseWrite ends the writer side: readers get the remaining data, then err,
// or io.EOF if err is nil. Later calls have no effect.
func (p *Pipe) CloseWrite(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	if p.werr == nil {
		p.werr = err
	}
	p.mu.Unlock()
	signal(p.readable)
}

// CloseRead ends the reader side: unconsumed data is released, and pending
// and later reads and writes fail with [ErrClosedPipe] (appended packets are
// released). Later calls have no effect.
func (p *Pipe) CloseRead() {
	p.mu.Lock()
	p.rclosed = true
	for _, s := range p.segs {
		s.Release()
	}
	p.dropFront(len(p.segs))
	p.size, p.examined = 0, 0
	p.release()
	p.mu.Unlock()
	signal(p.writable)
	signal(p.readable)
}
