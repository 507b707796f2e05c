package baseline

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The plain std-net caller of the frame formats: what a program without
// lifenet writes to call a server of length-field or SRMP frames, and so
// the baseline of lifenet's codec client. It does the work a caller needs
// and no more: every reply is matched to its request (by sequence number
// for SRMP, by order for the length field) and handed to that request's
// callback. It has no timeouts: a caller that gives up closes the
// connection, and every request still in flight then gets the error.

// Errors of the caller. A reply that matches nothing ends the connection:
// its stream can no longer be trusted.
var (
	// ErrUnmatched is the error for a reply that matches no request in
	// flight: an SRMP reply whose sequence number has no request, or a
	// length-field frame when no request is waiting.
	ErrUnmatched = errors.New("baseline: reply matches no request in flight")
	// ErrNotReply is the error for an SRMP frame from the server that is
	// neither a reply nor an error reply (a request or a one-way message).
	ErrNotReply = errors.New("baseline: frame from the server is not a reply")
	// ErrErrorReply is what a request's callback gets when the server
	// answered it with an SRMP error frame (kind 3); the frame's payload
	// comes with it.
	ErrErrorReply = errors.New("baseline: the server answered with an error")
	// ErrWindowFull is Send's error when no more requests can be in
	// flight: SRMP's 256 sequence numbers are all taken, or 256
	// length-field requests wait.
	ErrWindowFull = errors.New("baseline: every place for a request in flight is taken")
	// ErrPayloadTooLarge is Send's error for a length-field payload over
	// 65535 bytes (the format's uint16 length).
	ErrPayloadTooLarge = errors.New("baseline: payload too large for a length-field frame")
)

// MaxInFlight is how many requests a [Client] can have in flight: the 256
// SRMP sequence numbers, or 256 length-field requests.
const MaxInFlight = 256

// Callback gets a request's reply payload (the frame's header left out),
// valid only during the call, or the error that ended the request. It
// runs on the goroutine reading the replies ([Client.Receive] or
// [Client.Call]) and must not block.
type Callback func(reply []byte, err error)

// Client calls a server of format f over one connection. Requests are
// framed into a BufferSize [bufio.Writer] by [Client.Send] and leave at
// [Client.Flush]; replies are read into a BufferSize buffer, cut into
// frames, matched and handed to their requests' callbacks by
// [Client.Receive] (windowed use: one goroutine sends and flushes while
// another receives) or, one request at a time, by [Client.Call] (serial
// use, on the caller's goroutine). Send and Flush are for one goroutine,
// Receive for one other; Call excludes both. The client does not own the
// connection: whoever closes it ends Receive.
type Client struct {
	rw    io.ReadWriter
	f     Format
	w     *bufio.Writer
	rbuf  []byte
	have  int // bytes in rbuf, from its start
	start int // where the bytes not yet delivered start

	mu       sync.Mutex
	pending  [MaxInFlight]Callback // SRMP: by sequence number; length field: a ring, oldest at head
	inFlight int
	head     int
	free     [MaxInFlight]byte // SRMP: the free sequence numbers, a ring, the longest free first
	freeHead int
	freeN    int
	err      error // the error that ended the connection; Send returns it after

	// serial: Call's own callback, made once, and what it got.
	serialDone Callback
	reply      []byte
	replyErr   error
	answered   bool
}

// NewClient returns a client of format f (LengthField or SRMP) on rw.
// SRMP sequence numbers are given out 1…255, then 0, each freed number
// going to the back of the queue, as NewLife's client numbers serial
// requests.
func NewClient(rw io.ReadWriter, f Format) (*Client, error) {
	if f != LengthField && f != SRMP {
		return nil, ErrFormat
	}
	c := &Client{rw: rw, f: f, w: bufio.NewWriterSize(rw, BufferSize), rbuf: make([]byte, BufferSize), freeN: MaxInFlight}
	for i := range c.free {
		c.free[i] = byte(i + 1) // 1…255, then 0
	}
	c.serialDone = func(reply []byte, err error) { c.reply, c.replyErr, c.answered = reply, err, true }
	return c, nil
}

// Send frames a request carrying payload (and, for SRMP, flag in the
// header's low six bits) into the write buffer, to leave at the next
// Flush (or sooner, when the buffer fills), and registers done for its
// reply. done is called once, unless Send returns an error:
// ErrWindowFull when MaxInFlight requests are in flight,
// ErrPayloadTooLarge for a length-field payload over 65535 bytes, the
// error that ended the connection, or a write's error (which ends it:
// every request in flight gets it).
func (c *Client) Send(flag byte, payload []byte, done Callback) error {
	if c.f == LengthField && len(payload) > 0xFFFF {
		return ErrPayloadTooLarge
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	if c.inFlight == MaxInFlight {
		c.mu.Unlock()
		return ErrWindowFull
	}
	var seq byte
	if c.f == SRMP {
		seq = c.free[c.freeHead]
		c.freeHead = (c.freeHead + 1) % MaxInFlight
		c.freeN--
		c.pending[seq] = done
	} else {
		c.pending[(c.head+c.inFlight)%MaxInFlight] = done
	}
	c.inFlight++
	c.mu.Unlock()
	if err := c.frame(flag, seq, payload); err != nil {
		// A failed write ends the connection. The request is taken back
		// unless the connection's end has failed it already (done has
		// had the error): done runs once, or Send returns an error.
		mine := c.unsend(seq)
		c.fail(err)
		if mine {
			return err
		}
	}
	return nil
}

// frame writes one request frame into the write buffer.
func (c *Client) frame(flag, seq byte, payload []byte) error {
	w := c.w
	if c.f == SRMP {
		w.WriteByte(KindRequest<<6 | flag&0x3F)
		w.WriteByte(seq)
		if n := len(payload); n < 0xFFFF {
			w.WriteByte(byte(n))
			w.WriteByte(byte(n >> 8))
		} else {
			var ext [6]byte
			binary.LittleEndian.PutUint16(ext[:], 0xFFFF)
			binary.LittleEndian.PutUint32(ext[2:], uint32(n))
			w.Write(ext[:])
		}
	} else {
		w.WriteByte(byte(len(payload)))
		w.WriteByte(byte(len(payload) >> 8))
	}
	_, err := w.Write(payload) // bufio's errors stick: an earlier one shows here
	return err
}

// unsend takes back the request Send just registered, whose frame could
// not be written: SRMP's seq, or the last of the length field's queue. It
// reports false when the request is no longer pending (the connection has
// failed it).
func (c *Client) unsend(seq byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.inFlight--
	if c.f == SRMP {
		c.pending[seq] = nil
		c.release(seq)
	} else {
		c.pending[(c.head+c.inFlight)%MaxInFlight] = nil
	}
	return true
}

// release puts seq at the back of the free numbers. c.mu is held.
func (c *Client) release(seq byte) {
	c.free[(c.freeHead+c.freeN)%MaxInFlight] = seq
	c.freeN++
}

// Flush writes the buffered requests. A failed write ends the connection:
// every request in flight gets its error, which Flush returns.
func (c *Client) Flush() error {
	if err := c.w.Flush(); err != nil {
		return c.fail(err)
	}
	return nil
}

// InFlight returns how many requests wait for their replies.
func (c *Client) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

// Receive reads replies and hands each to its request's callback until the
// connection ends or a frame is bad: a reply matching no request in flight
// (ErrUnmatched), an SRMP frame that is not a reply (ErrNotReply), a
// frame larger than the buffer (ErrFrameTooLarge), a negative SRMP length
// (ErrBadLength). Every request still in flight then gets that error
// (io.ErrUnexpectedEOF for a stream that ends inside a frame), which
// Receive returns, and Send returns it from then on.
func (c *Client) Receive() error {
	for {
		if err := c.readSome(); err != nil {
			return c.fail(err)
		}
	}
}

// Call sends one request and reads until its reply has come, which it
// returns, valid until the next call on c; a serial caller's loop. Its
// errors are Receive's and Send's; after a bad frame or a read's error
// the connection is of no more use.
func (c *Client) Call(flag byte, payload []byte) ([]byte, error) {
	c.answered, c.reply, c.replyErr = false, nil, nil
	if err := c.Send(flag, payload, c.serialDone); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	for !c.answered {
		if err := c.readSome(); err != nil {
			c.fail(err)
			break
		}
	}
	return c.reply, c.replyErr
}

// readSome reads once and delivers every complete frame the buffer then
// holds. The bytes of an incomplete frame move to the buffer's front at
// the next call, so that the last reply delivered stays valid until then.
func (c *Client) readSome() error {
	if c.start > 0 {
		c.have = copy(c.rbuf, c.rbuf[c.start:c.have])
		c.start = 0
	}
	k, rerr := c.rw.Read(c.rbuf[c.have:])
	c.have += k
	off := 0
	for {
		size, err := FrameLen(c.f, c.rbuf[off:c.have])
		if err != nil {
			return err
		}
		if size == 0 { // the header is not complete
			break
		}
		if size > len(c.rbuf) {
			return ErrFrameTooLarge
		}
		if off+size > c.have {
			break
		}
		if err := c.deliver(c.rbuf[off : off+size]); err != nil {
			return err
		}
		off += size
	}
	c.start = off
	switch {
	case rerr == io.EOF && c.have > off:
		return io.ErrUnexpectedEOF
	case rerr != nil:
		return rerr
	}
	return nil
}

// deliver matches one reply frame to its request and calls its callback.
func (c *Client) deliver(frame []byte) error {
	if c.f == LengthField {
		c.mu.Lock()
		if c.inFlight == 0 {
			c.mu.Unlock()
			return fmt.Errorf("%w: a %d-byte length-field frame", ErrUnmatched, len(frame))
		}
		cb := c.pending[c.head]
		c.pending[c.head] = nil
		c.head = (c.head + 1) % MaxInFlight
		c.inFlight--
		c.mu.Unlock()
		cb(frame[2:], nil)
		return nil
	}
	kind, seq := frame[0]>>6, frame[1]
	if kind != KindReply && kind != KindError {
		return fmt.Errorf("%w: kind %d, sequence %d", ErrNotReply, kind, seq)
	}
	c.mu.Lock()
	cb := c.pending[seq]
	if cb == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: sequence %d", ErrUnmatched, seq)
	}
	c.pending[seq] = nil
	c.release(seq)
	c.inFlight--
	c.mu.Unlock()
	hdr := 4
	if binary.LittleEndian.Uint16(frame[2:]) == 0xFFFF {
		hdr = 8
	}
	var err error
	if kind == KindError {
		err = ErrErrorReply
	}
	cb(frame[hdr:], err)
	return nil
}

// fail ends the connection's requests with err: every request in flight
// gets it, and Send returns it from then on. It returns err.
func (c *Client) fail(err error) error {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	var cbs []Callback
	for i := range c.pending {
		if cb := c.pending[i]; cb != nil {
			cbs = append(cbs, cb)
			c.pending[i] = nil
		}
	}
	c.inFlight = 0
	c.mu.Unlock()
	for _, cb := range cbs {
		cb(nil, err)
	}
	return err
}
