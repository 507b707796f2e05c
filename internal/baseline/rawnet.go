// Package baseline is the plain standard-library baseline that lifenet is
// measured against: a goroutine per connection reading into a 64 KiB
// buffer, either counting or echoing each read (Serve), or handling each
// frame of a length-field or SRMP stream (ServeFrames); for UDP one
// goroutine answering each frame of each datagram (ServeDatagrams); and
// the caller of those streams, matching each reply to its request
// (Client). It uses no lifenet code on purpose.
package baseline

import (
	"net"
	"sync"
	"sync/atomic"
)

// BufferSize is the baseline's per-connection read buffer (and, for the
// frame loop, its write buffer and largest frame).
const BufferSize = 64 << 10

// Counts are one connection's counters. Only the connection's own
// goroutine adds to them, once per read; samplers load them.
type Counts struct {
	Bytes  atomic.Uint64 // bytes received
	Frames atomic.Uint64 // complete frames received (frame loop only)
}

// Server is a std-net server loop. Each connection keeps its own Counts;
// Bytes and Frames sum them (and those of connections that have ended)
// when loaded. Open counts the connections being served.
type Server struct {
	Bytes  Total // bytes received
	Frames Total // complete frames received (ServeFrames; 0 for Serve)
	Open   atomic.Int64

	l      net.Listener
	serve  func(c net.Conn, n *Counts)
	wg     sync.WaitGroup
	mu     sync.Mutex
	conn   map[net.Conn]*Counts
	ended  [2]uint64 // bytes and frames of the connections that have ended
	closed bool
}

// Total is one of a server's counters: Load sums it over the server's
// connections, at the time of the call.
type Total struct {
	s      *Server
	frames bool
}

// Load returns the sum over every connection served so far.
func (t *Total) Load() uint64 {
	i := 0
	if t.frames {
		i = 1
	}
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.ended[i]
	for _, n := range s.conn {
		sum += n.load(i)
	}
	return sum
}

func (n *Counts) load(i int) uint64 {
	if i == 1 {
		return n.Frames.Load()
	}
	return n.Bytes.Load()
}

// Serve starts accepting on l in a new goroutine; echo selects echoing
// every read back instead of only counting it.
func Serve(l net.Listener, echo bool) *Server {
	return start(l, func(c net.Conn, n *Counts) {
		buf := make([]byte, BufferSize)
		for {
			k, err := c.Read(buf)
			if k > 0 {
				n.Bytes.Add(uint64(k))
				if echo {
					if _, werr := c.Write(buf[:k]); werr != nil {
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// ServeFrames starts accepting on l in a new goroutine and runs ServeConn
// on every connection: each complete frame of format f goes to h (nil:
// frames are only counted).
func ServeFrames(l net.Listener, f Format, h Handler) *Server {
	return start(l, func(c net.Conn, n *Counts) { ServeConn(c, f, h, n) })
}

func start(l net.Listener, serve func(net.Conn, *Counts)) *Server {
	s := &Server{l: l, serve: serve, conn: make(map[net.Conn]*Counts)}
	s.Bytes, s.Frames = Total{s: s}, Total{s: s, frames: true}
	s.wg.Add(1)
	go s.accept()
	return s
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		n := new(Counts)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conn[c] = n
		s.Open.Add(1)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.forget(c, n)
			s.serve(c, n)
		}()
	}
}

// forget closes c, adds its counts to the ended totals and drops it from
// the open set.
func (s *Server) forget(c net.Conn, n *Counts) {
	c.Close()
	s.mu.Lock()
	s.ended[0] += n.Bytes.Load()
	s.ended[1] += n.Frames.Load()
	delete(s.conn, c)
	s.mu.Unlock()
	s.Open.Add(-1)
}

// Close stops the listener and every connection and waits for them.
func (s *Server) Close() {
	s.l.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conn {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
