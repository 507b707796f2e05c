package baseline

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// The datagram loop is the UDP counterpart of ServeConn: a datagram holds
// one or more whole frames (as NewLife's StandardCodec and lifenet's codec
// read a datagram session), each answered by the same Handler, each reply
// a datagram of its own.

// ErrPartialFrame is HandleDatagram's error for a datagram that ends
// inside a frame (a frame's header or body): a datagram holds whole frames
// only.
var ErrPartialFrame = errors.New("baseline: datagram ends inside a frame")

// Malformed reports whether err is HandleDatagram's verdict on a datagram
// that is not whole frames back to back (rather than a failed reply).
func Malformed(err error) bool {
	return errors.Is(err, ErrPartialFrame) || errors.Is(err, ErrBadLength) || errors.Is(err, ErrFormat)
}

// HandleDatagram hands each frame of datagram d, in order, to h (nil: the
// frames are only counted) and flushes w after each frame that h answered,
// so that every reply leaves as one Write of w's destination: one datagram.
// It returns the number of frames in d.
//
// A datagram is checked whole before any frame is handled: if it is not
// whole frames back to back it is malformed, h sees none of it, and the
// error is ErrPartialFrame, ErrBadLength (a negative SRMP length) or
// ErrFormat (see Malformed). An empty datagram holds no frame. A reply
// that cannot be sent ends the datagram's handling with the write's
// error; w then keeps it (bufio's errors stick) until w.Reset.
func HandleDatagram(d []byte, f Format, h Handler, w *bufio.Writer) (int, error) {
	frames := 0
	for off := 0; off < len(d); frames++ {
		size, err := FrameLen(f, d[off:])
		if err != nil {
			return 0, err
		}
		if size == 0 || size > len(d)-off {
			return 0, ErrPartialFrame
		}
		off += size
	}
	if h == nil {
		return frames, nil
	}
	for off := 0; off < len(d); {
		size, _ := FrameLen(f, d[off:])
		h(w, d[off:off+size])
		off += size
		if w.Buffered() > 0 {
			if err := w.Flush(); err != nil {
				return frames, err
			}
		}
	}
	return frames, nil
}

// DatagramServer is the std-net UDP frame loop: one goroutine reading a
// datagram at a time with ReadFromUDPAddrPort (the sender's address, no
// allocation) and answering its frames with WriteToUDPAddrPort. Its
// counters have that goroutine as their only writer.
type DatagramServer struct {
	Bytes       atomic.Uint64 // bytes received
	Datagrams   atomic.Uint64 // datagrams received (empty ones included)
	Frames      atomic.Uint64 // frames of the well-formed datagrams
	Malformed   atomic.Uint64 // datagrams dropped unanswered: not whole frames
	WriteErrors atomic.Uint64 // replies that could not be sent

	conn *net.UDPConn
	wg   sync.WaitGroup
}

// ServeDatagrams starts the datagram loop on c in a new goroutine: each
// datagram goes through HandleDatagram with format f and handler h (nil:
// frames are only counted), replies to its sender. The server owns c from
// now on: Close closes it.
func ServeDatagrams(c *net.UDPConn, f Format, h Handler) *DatagramServer {
	s := &DatagramServer{conn: c}
	s.wg.Go(func() { s.loop(f, h) })
	return s
}

// Addr is the address the server receives on.
func (s *DatagramServer) Addr() net.Addr { return s.conn.LocalAddr() }

// Close closes the socket and waits for the loop to end.
func (s *DatagramServer) Close() {
	s.conn.Close()
	s.wg.Wait()
}

// replyTo is the destination of the loop's bufio.Writer: every Write is
// one datagram to the sender of the datagram being handled.
type replyTo struct {
	conn *net.UDPConn
	to   netip.AddrPort
}

func (r *replyTo) Write(b []byte) (int, error) { return r.conn.WriteToUDPAddrPort(b, r.to) }

func (s *DatagramServer) loop(f Format, h Handler) {
	buf := make([]byte, BufferSize) // above the largest UDP payload (65,507 bytes)
	out := &replyTo{conn: s.conn}
	w := bufio.NewWriterSize(out, BufferSize)
	for {
		k, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient receive error: the next datagram is unaffected
		}
		s.Bytes.Add(uint64(k))
		s.Datagrams.Add(1)
		out.to = from
		n, err := HandleDatagram(buf[:k], f, h, w)
		if n > 0 {
			s.Frames.Add(uint64(n))
		}
		switch {
		case err == nil:
		case Malformed(err):
			s.Malformed.Add(1)
		default:
			s.WriteErrors.Add(1)
			w.Reset(out) // drop the sticky error and the unsent reply
		}
	}
}
