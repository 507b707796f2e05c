package baseline

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Format is a frame format of the per-message loop (ServeConn).
type Format uint8

// The formats, as lifenet's codecs put them on the wire (docs/PROTOCOL.md).
const (
	// LengthField: a uint16 LE payload length, then the payload.
	LengthField Format = iota + 1
	// SRMP: byte 0 is kind<<6 | flag, byte 1 the sequence, bytes 2-3 the
	// uint16 LE payload length; a length of 0xFFFF means an int32 LE
	// length follows in bytes 4-7 (an 8-byte header). Then the payload.
	SRMP
)

// SRMP kinds, the top two bits of a frame's first byte.
const (
	KindRequest = 0 // expects a reply
	KindOneWay  = 1
	KindReply   = 2
	KindError   = 3
)

// Errors that end a connection of the frame loop.
var (
	ErrFrameTooLarge = fmt.Errorf("baseline: frame larger than the %d-byte read buffer", BufferSize)
	ErrBadLength     = errors.New("baseline: negative SRMP frame length")
	ErrFormat        = errors.New("baseline: unknown frame format")
)

// ParseFormat returns the format named "lengthfield" or "srmp".
func ParseFormat(name string) (Format, error) {
	switch name {
	case "lengthfield":
		return LengthField, nil
	case "srmp":
		return SRMP, nil
	}
	return 0, fmt.Errorf("baseline: unknown frame format %q", name)
}

func (f Format) String() string {
	switch f {
	case LengthField:
		return "lengthfield"
	case SRMP:
		return "srmp"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// FrameLen returns the length, header included, of the frame that starts
// b, or 0 when b is too short to hold the frame's header. The length may
// exceed len(b) (the frame is not complete yet).
func FrameLen(f Format, b []byte) (int, error) {
	switch f {
	case LengthField:
		if len(b) < 2 {
			return 0, nil
		}
		return 2 + int(binary.LittleEndian.Uint16(b)), nil
	case SRMP:
		if len(b) < 4 {
			return 0, nil
		}
		if n := binary.LittleEndian.Uint16(b[2:]); n != 0xFFFF {
			return 4 + int(n), nil
		}
		if len(b) < 8 {
			return 0, nil
		}
		n := int32(binary.LittleEndian.Uint32(b[4:]))
		if n < 0 {
			return 0, ErrBadLength
		}
		return 8 + int(n), nil
	}
	return 0, ErrFormat
}

// ReadFrame reads one whole frame of format f from r into buf: the reply
// a serial caller waits for, alone on its connection, so bytes past the
// frame are an error, as is a frame larger than buf.
func ReadFrame(r io.Reader, f Format, buf []byte) error {
	have := 0
	for {
		m, err := r.Read(buf[have:])
		have += m
		size, ferr := FrameLen(f, buf[:have])
		switch {
		case ferr != nil:
			return ferr
		case size > 0 && have == size:
			return nil
		case size > 0 && (have > size || size > len(buf)):
			return fmt.Errorf("baseline: a %d-byte frame, %d bytes read", size, have)
		case err != nil:
			return err
		}
	}
}

// Call writes the request frame req to c and reads the one frame of
// format f that answers it into buf: the plainest serial caller, the
// floor a client's benchmark is compared with.
func Call(c io.ReadWriter, f Format, req, buf []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	return ReadFrame(c, f, buf)
}

// Handler handles one complete frame (header included) and writes its
// reply, if any, to w; ServeConn flushes w once per read. frame is valid
// only during the call.
type Handler func(w *bufio.Writer, frame []byte)

// Answer returns an SRMP handler that answers every request with a reply
// of the request's flag and sequence carrying payload (under 64 KiB), as a
// server whose every call returns the same result would; one-way and other
// frames get no answer.
func Answer(payload string) Handler {
	if len(payload) > 0xFFFE {
		panic("baseline: Answer's payload needs the extended header")
	}
	return func(w *bufio.Writer, frame []byte) {
		if frame[0]>>6 != KindRequest {
			return
		}
		// Byte by byte: a slice of a local array would escape into the
		// writer and be allocated per reply.
		w.WriteByte(KindReply<<6 | frame[0]&0x3F)
		w.WriteByte(frame[1])
		w.WriteByte(byte(len(payload)))
		w.WriteByte(byte(len(payload) >> 8))
		w.WriteString(payload)
	}
}

// Echo returns the echo handler of format f. A length-field frame goes
// back as it is. An SRMP request (kind 0) is answered with a reply (kind
// 2) carrying its flag, sequence and payload; other SRMP frames (one-way,
// replies, errors) get no answer.
func Echo(f Format) Handler {
	if f == SRMP {
		return func(w *bufio.Writer, frame []byte) {
			if frame[0]>>6 != KindRequest {
				return
			}
			w.WriteByte(KindReply<<6 | frame[0]&0x3F)
			w.Write(frame[1:])
		}
	}
	return func(w *bufio.Writer, frame []byte) { w.Write(frame) }
}

// ServeConn is the per-message loop on one connection. It reads into a
// BufferSize buffer, hands each complete frame of format f to h (nil:
// frames are only counted), and flushes the replies, written to a
// BufferSize bufio.Writer, once per read; the bytes of an incomplete frame
// move to the front of the buffer before the next read. n (may be nil)
// grows once per read.
//
// It returns what ended the loop: the read's error (io.EOF at a clean end,
// io.ErrUnexpectedEOF when the stream ends inside a frame), a write's
// error, ErrFrameTooLarge for a frame longer than the buffer, or
// ErrBadLength. Replies to the frames before a bad one are flushed first.
func ServeConn(rw io.ReadWriter, f Format, h Handler, n *Counts) error {
	if _, err := FrameLen(f, nil); err != nil {
		return err
	}
	if n == nil {
		n = new(Counts)
	}
	buf := make([]byte, BufferSize)
	var w *bufio.Writer
	if h != nil {
		w = bufio.NewWriterSize(rw, BufferSize)
	}
	have := 0 // bytes in buf, from its start
	for {
		k, rerr := rw.Read(buf[have:])
		have += k
		off, frames := 0, uint64(0)
		var perr error
		for {
			size, err := FrameLen(f, buf[off:have])
			if err != nil {
				perr = err
				break
			}
			if size == 0 { // the header is not complete
				break
			}
			if size > len(buf) {
				perr = ErrFrameTooLarge
				break
			}
			if off+size > have {
				break
			}
			if h != nil {
				h(w, buf[off:off+size])
			}
			frames++
			off += size
		}
		if k > 0 {
			n.Bytes.Add(uint64(k))
		}
		if frames > 0 {
			n.Frames.Add(frames)
		}
		if w != nil && w.Buffered() > 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		switch {
		case perr != nil:
			return perr
		case rerr == io.EOF && have > off:
			return io.ErrUnexpectedEOF
		case rerr != nil:
			return rerr
		}
		if off > 0 {
			have = copy(buf, buf[off:have])
		}
	}
}
