package loadtest

import (
	"context"
	"encoding/binary"
	"time"
)

// The counting raw client with --codec (--oneway, --count-replies, and
// every UDP codec run: a driver that loads a server without a caller's
// work, against lifenet's codec server and the baseline's per-message
// server alike) sends valid frames of --size bytes, header included: a
// 2-byte length field, or a 4-byte SRMP header of kind request (one-way
// with --oneway), flag 1 and sequence 1…255 in turn. Replies have the
// request's size, so it counts them by bytes. The matching raw client, a
// caller, is baseline.Client (basecodec.go).

// frameRing holds the messages a connection sends, back to back, so that
// the next k of them are always one contiguous slice. Without a codec it
// is the payload alone. With a codec it holds period distinct frames
// (SRMP: one per sequence number; length field: 1, all frames alike) and
// then the first most-1 again.
type frameRing struct {
	buf    []byte
	size   int
	period int
	most   int // the largest k of take
}

// newFrameRing builds the ring of cfg's messages from payload (--size
// random bytes), for runs of up to most messages per write.
func newFrameRing(cfg *Config, payload []byte, most int) frameRing {
	if cfg.Codec == "none" || !cfg.rawClient() || cfg.baselineCodec() {
		return frameRing{buf: payload, size: len(payload), period: 1, most: 1}
	}
	size, hdr, period := cfg.Size, codecHeader(cfg.Codec), 1
	if cfg.Codec == "srmp" {
		period = 255
	}
	n := period + most - 1
	buf := make([]byte, n*size)
	for i := range n {
		f := buf[i*size : (i+1)*size]
		copy(f[hdr:], payload[hdr:])
		if cfg.Codec == "srmp" {
			kind := byte(0) // request
			if cfg.OneWay {
				kind = 1
			}
			f[0], f[1] = kind<<6|1, byte(i%255+1)
			binary.LittleEndian.PutUint16(f[2:], uint16(size-hdr)) // size ≤ baseline.BufferSize: never the long header
		} else {
			binary.LittleEndian.PutUint16(f, uint16(size-hdr))
		}
	}
	return frameRing{buf: buf, size: size, period: period, most: most}
}

// take returns the k messages (1 ≤ k ≤ most) from position *pos on and
// moves *pos past them.
func (f *frameRing) take(pos *int, k int) []byte {
	b := f.buf[*pos*f.size : (*pos+k)*f.size]
	*pos = (*pos + k) % f.period
	return b
}

// windowed reports whether pipeline runs keep a window of frames in flight
// counted by bytes (the counting raw client with a codec) rather than
// streaming.
func (r *run) windowed() bool {
	return r.cfg.Codec != "none" && r.cfg.rawClient() && !r.cfg.baselineCodec() && !r.cfg.OneWay && r.cfg.Mode == "pipeline"
}

// inFlight is the window: --window, or the codec's limit (SRMP 255
// sequence numbers, length field 256 as lifenet's FIFO matcher).
func (r *run) inFlight() int {
	switch {
	case r.cfg.Window > 0:
		return r.cfg.Window
	case r.cfg.Codec == "srmp":
		return 255
	}
	return 256
}

// pipelineSender returns what sends on c in a pipeline run, and the hook
// c's receiver calls with the size of every read (nil: none). A stream
// sends until the window ends; a windowed run sends the first window in
// one write and then, for each read that completes replies, exactly that
// many frames in one write, on a goroutine of its own so that a write
// never holds up the reading.
func (r *run) pipelineSender(ctx context.Context, c *connRun) (send func(), received func(n int)) {
	if !r.windowed() {
		return func() { r.sendLoop(ctx, c) }, nil
	}
	w := r.inFlight()
	// At most w frames are owed, and each credit is at least one frame:
	// w slots never fill unless the server answers more than was asked.
	credits := make(chan int, w)
	size, partial := r.cfg.Size, 0
	received = func(n int) {
		partial += n
		k := partial / size
		partial -= k * size
		if k > 0 && ctx.Err() == nil {
			select {
			case credits <- k:
			default:
			}
		}
	}
	return func() { r.windowLoop(ctx, c, credits, w) }, received
}

// udpStall is how long a UDP window waits without a reply before it takes
// what it has in flight for lost and sends a whole window again: replies
// to lost requests never come back to free their places.
const udpStall = 250 * time.Millisecond

// windowLoop writes the first w frames, then a refill for each credit,
// until ctx ends; the pipeline then drains what is still owed. Over UDP
// each frame is a datagram of its own (as lifenet's codec client sends
// them), and a window that stalls for udpStall is sent again.
func (r *run) windowLoop(ctx context.Context, c *connRun, credits <-chan int, w int) {
	var stalled <-chan time.Time
	var stall *time.Timer
	if r.cfg.UDP {
		stall = time.NewTimer(udpStall)
		defer stall.Stop()
		stalled = stall.C
	}
	pos, k := 0, w
	for {
		if err := r.sendFrames(c, &pos, k); err != nil {
			r.fail(c, "send", err)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if stall != nil {
			stall.Reset(udpStall) // no stale tick to drain: timers since Go 1.23
		}
		select {
		case k = <-credits:
			k = min(k, w)
		case <-stalled:
			k = w
		case <-ctx.Done():
			return
		}
	}
}

// sendFrames sends the next k frames of the ring: in one write over TCP,
// a datagram each over UDP.
func (r *run) sendFrames(c *connRun, pos *int, k int) error {
	b := r.ring.take(pos, k)
	if !r.cfg.UDP {
		if err := c.send(b); err != nil {
			return err
		}
		c.sent.Add(uint64(len(b)))
		r.sent.Add(uint64(len(b)))
		return nil
	}
	size := r.cfg.Size
	for off := 0; off < len(b); off += size {
		if err := c.send(b[off : off+size]); err != nil {
			return err
		}
		c.sent.Add(uint64(size))
		r.sent.Add(uint64(size))
	}
	return nil
}
