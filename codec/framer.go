package codec

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
)

// Splitter finds frame boundaries in a byte stream. FrameLen looks at the
// start of b and returns n > 0, the whole frame's length in bytes (which may
// exceed len(b)); or n < 0, meaning at least -n bytes are needed before the
// length can be known; or an error (wrapping [ErrCorruptFrame]) if b can never
// start a valid frame. Lengths are computed in 64-bit arithmetic and a
// frame longer than maxFrame is reported as ErrFrameTooLarge.
type Splitter interface {
	FrameLen(b []byte, maxFrame int) (int, error)
}

// FramerConfig limits a Framer. Zero fields take the defaults; see
// DefaultFramerConfig.
type FramerConfig struct {
	MaxFrame int           // largest frame in bytes, header included (default DefaultMaxFrame)
	Expire   time.Duration // how long a frame may take from its first byte to its last (default DefaultExpire; negative: never)
}

// DefaultFramerConfig returns the framer limits with every field set to
// its default; a zero [FramerConfig] means the same.
func DefaultFramerConfig() FramerConfig { return FramerConfig{}.withDefaults() }

// Validate reports a field out of range. Zero fields are valid.
func (c FramerConfig) Validate() error {
	if c.MaxFrame < 0 {
		return fmt.Errorf("%w: MaxFrame %d is negative", ErrConfig, c.MaxFrame)
	}
	return nil
}

func (c FramerConfig) withDefaults() FramerConfig {
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.Expire == 0 {
		c.Expire = DefaultExpire
	}
	return c
}

// Framer splits a byte stream into frames: any split of the input (a byte
// at a time, many frames per read, a frame across many reads) yields the
// same frames.
//
// Frames are lent, not given: emit gets a borrowed view (packet.Loan),
// valid during the call. A frame that lies whole in one input is a view of
// that input, with no copy and no buffer taken from the pool; only a frame
// that spans inputs is assembled, by copying, in a buffer the framer owns.
// A receiver that keeps a frame calls Keep (or Share, Clone) on it; a
// share of the input shows in the input's RefCount, so a receive loop knows
// not to reuse that buffer.
//
// A [Framer] holds one connection's state and is not safe for concurrent use.
type Framer struct {
	conf    *framerConf    // the splitter and limits, shared by the connections of a pipeline's stage
	partial *packet.Packet // bytes of an incomplete frame (owned)
	since   atomic.Int64   // mono reading of the partial frame's first byte; 0 without one (read by sweepers)
	held    int            // bytes of its server's budget taken by partial
	// A framer of a Conn's pipeline stage is told its connection, its
	// owner, by each call that may start or drop a partial frame (a
	// server's connection is in its server's partials while its framer
	// holds one, and the bytes count in the server's budget); a framer of
	// NewFramer or NewChain has none. It is not a field: that would be one
	// more pointer in every idle connection.
}

// framerConf is what the framers of a pipeline's stage share: the
// splitter, its limits, and how the stage turns a frame into the message
// it lends on. It never changes once made.
type framerConf struct {
	split  Splitter
	max    int
	expire time.Duration
	// short is the header length of the splitter's common frame, whose
	// length feed reads inline (see shortLen): SRMP's 4 bytes, the default
	// length field's 2; 0 for any other splitter. shortExt is a length
	// value that is not such a frame (SRMP's marker of the long header).
	short, shortExt int

	kind   stageKind   // the framing stage's format
	decode frameDecode // how the stage's frame becomes the message it lends on
	header int         // length-field with a fixed-size field: the header to skip
	lf     LengthField // the length-field stage's format
	delim  Delimiter   // the delimiter stage's
}

// Expired reports whether the framer has held an incomplete frame for
// longer than its Expire at now. The age is measured on the monotonic
// clock (now must carry a monotonic reading, as time.Now's does), so a
// wall-clock step neither expires frames early nor keeps them. Unlike the
// framer's other methods it may be called from any goroutine: a server's
// sweeper ends connections that went quiet in the middle of a frame, which
// no later read would notice.
func (f *Framer) Expired(now time.Time) bool { return f.expiredAt(mono.Of(now)) }

// expiredAt is Expired at a mono reading.
func (f *Framer) expiredAt(now int64) bool {
	t := f.since.Load()
	return t != 0 && f.conf.expire > 0 && now-t > int64(f.conf.expire)
}

// NewFramer returns a framer using split. It panics if cfg does not
// Validate (a programming error, as with a nil split).
func NewFramer(split Splitter, cfg FramerConfig) *Framer {
	return &Framer{conf: newFramerConf(split, cfg)}
}

// newFramerConf returns the settings of framers using split. It panics
// if cfg does not Validate.
func newFramerConf(split Splitter, cfg FramerConfig) *framerConf {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	fc := &framerConf{split: split, max: cfg.MaxFrame, expire: cfg.Expire, shortExt: -1}
	switch sp := split.(type) {
	case SRMPSplitter:
		fc.short, fc.shortExt = srmpHeaderLen, srmpExtMarker
	case LengthField:
		if sp.Offset == 0 && sp.size() == 2 {
			fc.short = 2
		}
	}
	return fc
}

// Buffered returns the bytes held of an incomplete frame.
func (f *Framer) Buffered() int {
	if f.partial == nil {
		return 0
	}
	return f.partial.Len()
}

// Reset drops any incomplete frame.
func (f *Framer) Reset() { f.reset(nil) }

// reset is Reset for a framer of owner's (see [Framer]).
func (f *Framer) reset(owner *Conn) {
	if f.partial != nil {
		f.partial.Release()
		f.partial = nil
		f.since.Store(0)
		partialBudget(owner).give(f.held)
		f.held = 0
		tellOwner(owner, false)
	}
}

// tellOwner tells the server of owner, a framer's connection (nil: none),
// that the framer now holds a partial frame, or (held false) holds none.
func tellOwner(owner *Conn, held bool) {
	if owner != nil && owner.side.server != nil {
		owner.side.server.hold(owner, held)
	}
}

// partialBudget is the budget for partial frames of the server of owner,
// a framer's connection; nil (no limit) for a client's framer or one
// without a connection.
func partialBudget(owner *Conn) *budget {
	if owner != nil && owner.side.server != nil {
		return owner.side.server.budget
	}
	return nil
}

// budget counts the bytes a server's connections hold in partial frames
// against a limit. Its methods are safe for concurrent use; a nil budget
// has no limit.
type budget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes, or reports false if they would pass the limit.
func (b *budget) take(n int) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return false
	}
	return true
}

func (b *budget) give(n int) {
	if b != nil && n > 0 {
		b.used.Add(-int64(n))
	}
}

// Close reports [ErrTruncated] if the stream ended inside a frame, and
// releases what the framer holds.
func (f *Framer) Close() error { return f.close(nil) }

// close is Close for a framer of owner's.
func (f *Framer) close(owner *Conn) error {
	n := f.Buffered()
	f.reset(owner)
	if n > 0 {
		return fmt.Errorf("%w (%d bytes buffered)", ErrTruncated, n)
	}
	return nil
}

// Feed splits the bytes of p, calling emit with each complete frame, which
// emit borrows (see [Framer]). p stays the caller's.
// On an error the framer's state is dropped and the connection must end.
func (f *Framer) Feed(p *packet.Packet, emit func(*packet.Packet) error) error {
	s := takeScratch(0)
	s.fn = emit
	defer giveScratch(0, s)
	return f.feed(p, (*funcScratch)(s), nil)
}

// frameReceiver gets the frames a [Framer] cuts: the n bytes of src's
// first segment from off, which it lends on (packet.Loan) as what its
// stage passes, and whose loan it ends before it returns. (An interface,
// so that the framing stages are called directly, without a method
// value's wrapper; the receiver lends, so that a stage lends its payload
// past the header at once, not the frame to be skipped.)
type frameReceiver interface {
	receiveFrame(src *packet.Packet, off, n int) error
}

// funcScratch is the read scratch of Framer.Feed, lending each frame
// whole to its fn.
type funcScratch readScratch

func (s *funcScratch) receiveFrame(src *packet.Packet, off, n int) error {
	err := s.fn(s.loan.Lend(src, off, n))
	s.loan.End()
	return err
}

// feed is Feed to a frame receiver, for a framer of owner's.
func (f *Framer) feed(p *packet.Packet, emit frameReceiver, owner *Conn) (err error) {
	if f.partial != nil && f.expiredAt(mono.Now()) {
		f.reset(owner)
		return ErrFrameExpired
	}
	for seg := p; seg != nil && err == nil; seg = seg.Next() {
		data := seg.Bytes()
		off := 0
		if f.partial != nil {
			off, err = f.completePartial(data, emit, owner)
		}
		for err == nil && off < len(data) {
			n := f.shortLen(data[off:])
			if n == 0 {
				if n, err = f.frameLen(data[off:]); err != nil {
					break
				}
			}
			if n <= 0 || n > len(data)-off {
				err = f.keep(data[off:], n, owner)
				break
			}
			err = emit.receiveFrame(seg, off, n)
			off += n
		}
	}
	if err != nil {
		f.reset(owner)
	}
	return err
}

// shortLen is the length of the frame at the start of b when it has the
// splitter's short common header (see Framer.short), complete, and fits
// the limit; else 0, and frameLen decides. It inlines: it runs once per
// frame.
func (f *Framer) shortLen(b []byte) int {
	fc := f.conf
	h := fc.short
	if h == 0 || len(b) < h || len(b) < 2 {
		return 0
	}
	n := int(b[h-1])<<8 | int(b[h-2]) // the little-endian 16-bit length ending the header
	if n == fc.shortExt || h+n > fc.max {
		return 0
	}
	return h + n
}

// frameLen asks the splitter for the frame at the start of b, calling this
// package's splitters directly (they inline) rather than through the
// interface.
func (f *Framer) frameLen(b []byte) (int, error) {
	if n := f.shortLen(b); n > 0 {
		return n, nil
	}
	fc := f.conf
	switch sp := fc.split.(type) {
	case SRMPSplitter:
		return sp.FrameLen(b, fc.max)
	case LengthField:
		return sp.FrameLen(b, fc.max)
	}
	return fc.split.FrameLen(b, fc.max)
}

// keepFirst is the most a partial buffer reserves before the frame's bytes
// arrive: a peer declaring a huge frame and sending a few bytes makes the
// server hold a few KiB, not the frame (appendPartial grows it as bytes
// come).
const keepFirst = 4 << 10

// keep starts a partial frame with the unframed tail b; want is the frame
// length (or the negated bytes needed), used to size the buffer.
func (f *Framer) keep(b []byte, want int, owner *Conn) error {
	size := len(b)
	if want > 0 {
		size = min(want, max(len(b), keepFirst))
	}
	size = max(size, len(b))
	if !partialBudget(owner).take(size) {
		return ErrMemoryCap
	}
	f.held = size
	f.partial = packet.Get(size)
	f.partial.Resize(0)
	f.partial.Write(b)
	f.since.Store(mono.Now())
	tellOwner(owner, true)
	return nil
}

// appendPartial adds b to the partial frame of want bytes. The buffer
// grows geometrically but never past the frame's declared size: a 10 MiB
// frame holds 10 MiB, not the next power of two.
func (f *Framer) appendPartial(b []byte, want int, owner *Conn) error {
	p := f.partial
	if need := p.Len() + len(b); need > p.Cap() {
		size := max(need, min(2*p.Cap(), want))
		if !partialBudget(owner).take(size - f.held) {
			return ErrMemoryCap
		}
		f.held = size
		q := packet.Get(size)
		q.Resize(0)
		q.Write(p.Bytes())
		p.Release()
		f.partial, p = q, q
	}
	p.Write(b)
	return nil
}

// completePartial adds bytes from data to the partial frame until it is
// complete (emitting it) or data runs out; it returns how many bytes of
// data it used. Bytes past the frame's end never enter the partial buffer
// unless the splitter cannot tell the length without them (a delimiter).
func (f *Framer) completePartial(data []byte, emit frameReceiver, owner *Conn) (int, error) {
	used := 0
	for f.partial != nil {
		n, err := f.frameLen(f.partial.Bytes())
		if err != nil {
			return used, err
		}
		if n > 0 && n <= f.partial.Len() {
			if err := f.emitPartial(n, emit, owner); err != nil {
				return used, err
			}
			continue
		}
		if used == len(data) {
			return used, nil
		}
		want := max(n, -n) // the frame's length, or the bytes needed to know it
		k := min(want-f.partial.Len(), len(data)-used)
		if err := f.appendPartial(data[used:used+k], want, owner); err != nil {
			return used, err
		}
		used += k
	}
	return used, nil
}

// emitPartial emits the first n bytes of the partial buffer as a frame and
// keeps the rest, if any. The frame is complete: its clock stops before it
// is emitted, so that a sweeper never takes a frame being served (by an
// inline handler, or one waiting to write its reply) for an expired partial
// one. The rest, the next frame's start, is timed from when emit returns,
// when reading resumes.
func (f *Framer) emitPartial(n int, emit frameReceiver, owner *Conn) error {
	p := f.partial
	f.since.Store(0)
	err := emit.receiveFrame(p, 0, n)
	if n == p.Len() {
		f.reset(owner)
	} else {
		p.Skip(n)
		f.since.Store(mono.Now()) // the rest starts the next frame
	}
	return err
}
