package codec

import (
	"errors"
	"fmt"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// Framing errors. Each ends the connection it happened on: once a stream
// is out of step, no later byte can be trusted.
var (
	// ErrFrameTooLarge: a frame's declared length exceeds MaxFrame. It is
	// checked before any buffer is taken for the frame.
	ErrFrameTooLarge = errors.New("codec: frame exceeds the maximum size")
	// ErrFrameExpired: the rest of a partial frame did not arrive within
	// Expire.
	ErrFrameExpired = errors.New("codec: partial frame expired")
	// ErrCorruptFrame: bytes that cannot start a valid frame.
	ErrCorruptFrame = errors.New("codec: corrupt frame")
	// ErrTruncated: the stream ended inside a frame.
	ErrTruncated = errors.New("codec: stream ended inside a frame")
)

// Splitter finds frame boundaries in a byte stream. FrameLen looks at the
// start of b and returns n > 0, the whole frame's length in bytes (which may
// exceed len(b)); or n < 0, meaning at least -n bytes are needed before the
// length can be known; or an error (wrapping ErrCorruptFrame) if b can never
// start a valid frame. Lengths are computed in 64-bit arithmetic and a
// frame longer than maxFrame is reported as ErrFrameTooLarge.
type Splitter interface {
	FrameLen(b []byte, maxFrame int) (int, error)
}

// FramerConfig limits a Framer. Zero fields take the defaults.
type FramerConfig struct {
	MaxFrame      int           // default DefaultMaxFrame
	Expire        time.Duration // default DefaultExpire; negative: never
	CopyThreshold int           // default DefaultCopyThreshold
}

func (c FramerConfig) withDefaults() FramerConfig {
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.Expire == 0 {
		c.Expire = DefaultExpire
	}
	if c.CopyThreshold <= 0 {
		c.CopyThreshold = DefaultCopyThreshold
	}
	return c
}

// Framer splits a byte stream into frames: any split of the input (a byte
// at a time, many frames per read, a frame across many reads) yields the
// same frames. A frame that lies whole in one input is copied into a fitted
// pooled buffer if it is shorter than CopyThreshold and shared (no copy)
// otherwise; only a frame that spans inputs is assembled by copying.
//
// A Framer holds one connection's state and is not safe for concurrent use.
type Framer struct {
	split     Splitter
	max       int
	copyBelow int
	expire    time.Duration
	partial   *packet.Packet // bytes of an incomplete frame (owned)
	last      time.Time      // when partial last grew
}

// NewFramer returns a framer using split.
func NewFramer(split Splitter, cfg FramerConfig) *Framer {
	cfg = cfg.withDefaults()
	return &Framer{split: split, max: cfg.MaxFrame, copyBelow: cfg.CopyThreshold, expire: cfg.Expire}
}

// Buffered returns the bytes held of an incomplete frame.
func (f *Framer) Buffered() int {
	if f.partial == nil {
		return 0
	}
	return f.partial.Len()
}

// Reset drops any incomplete frame.
func (f *Framer) Reset() {
	if f.partial != nil {
		f.partial.Release()
		f.partial = nil
	}
}

// Close reports ErrTruncated if the stream ended inside a frame, and
// releases what the framer holds.
func (f *Framer) Close() error {
	n := f.Buffered()
	f.Reset()
	if n > 0 {
		return fmt.Errorf("%w (%d bytes buffered)", ErrTruncated, n)
	}
	return nil
}

// Feed splits the bytes of p, calling emit with each complete frame; emit
// owns the frame. p is not kept: shares are taken where frames are sliced.
// On an error the framer's state is dropped and the connection must end.
func (f *Framer) Feed(p *packet.Packet, emit func(*packet.Packet) error) error {
	if f.partial != nil && f.expire > 0 && time.Since(f.last) > f.expire {
		f.Reset()
		return ErrFrameExpired
	}
	for seg := p; seg != nil; seg = seg.Next() {
		if err := f.feedSegment(seg, emit); err != nil {
			f.Reset()
			return err
		}
	}
	return nil
}

func (f *Framer) feedSegment(seg *packet.Packet, emit func(*packet.Packet) error) error {
	data := seg.Bytes()
	off := 0
	if f.partial != nil {
		n, err := f.completePartial(data, emit)
		if err != nil {
			return err
		}
		off = n
	}
	for off < len(data) {
		n, err := f.split.FrameLen(data[off:], f.max)
		if err != nil {
			return err
		}
		if n <= 0 || n > len(data)-off {
			f.keep(data[off:], n)
			return nil
		}
		if err := emit(f.cut(seg, off, n)); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// cut returns frame [off, off+n) of seg: a fitted copy for small frames (and
// for plain views, whose memory the caller reuses), a share otherwise.
func (f *Framer) cut(seg *packet.Packet, off, n int) *packet.Packet {
	if n >= f.copyBelow && seg.Owned() {
		return seg.Slice(off, n)
	}
	c := packet.Get(n)
	copy(c.Bytes(), seg.Bytes()[off:off+n])
	return c
}

// keepAhead bounds how far beyond the bytes at hand the partial buffer is
// sized in advance, so that a peer declaring a huge frame and sending a few
// bytes cannot make the server reserve the whole frame.
const keepAhead = 64 << 10

// keep starts a partial frame with the unframed tail b; want is the frame
// length (or the negated bytes needed), used to size the buffer.
func (f *Framer) keep(b []byte, want int) {
	size := len(b)
	if want > 0 {
		size = min(want, len(b)+keepAhead)
	}
	f.partial = packet.Get(max(size, len(b)))
	f.partial.Resize(0)
	f.partial.Write(b)
	f.last = time.Now()
}

// completePartial adds bytes from data to the partial frame until it is
// complete (emitting it) or data runs out; it returns how many bytes of
// data it used. Bytes past the frame's end never enter the partial buffer
// unless the splitter cannot tell the length without them (a delimiter).
func (f *Framer) completePartial(data []byte, emit func(*packet.Packet) error) (int, error) {
	used := 0
	for f.partial != nil {
		n, err := f.split.FrameLen(f.partial.Bytes(), f.max)
		if err != nil {
			return used, err
		}
		if n > 0 && n <= f.partial.Len() {
			if err := f.emitPartial(n, emit); err != nil {
				return used, err
			}
			continue
		}
		if used == len(data) {
			f.last = time.Now()
			return used, nil
		}
		want := n
		if want < 0 {
			want = -want
		}
		k := min(want-f.partial.Len(), len(data)-used)
		f.partial.Write(data[used : used+k])
		used += k
	}
	return used, nil
}

// emitPartial emits the first n bytes of the partial buffer as a frame and
// keeps the rest, if any.
func (f *Framer) emitPartial(n int, emit func(*packet.Packet) error) error {
	p := f.partial
	if n == p.Len() {
		f.partial = nil
		return emit(p)
	}
	frame := f.cut(p, 0, n)
	p.Skip(n)
	return emit(frame)
}
