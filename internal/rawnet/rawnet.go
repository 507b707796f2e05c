// Package rawnet is the plain standard-library baseline that lifenet is
// measured against: a goroutine per connection reading into a 64 KiB
// buffer, counting or echoing. It uses no lifenet code on purpose.
package rawnet

import (
	"net"
	"sync"
	"sync/atomic"
)

// BufferSize is the baseline's per-connection read buffer.
const BufferSize = 64 << 10

// Server is a std-net server loop. Bytes counts everything received;
// Open counts the connections being served.
type Server struct {
	Bytes atomic.Uint64
	Open  atomic.Int64

	l      net.Listener
	echo   bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conn   map[net.Conn]struct{}
	closed bool
}

// Serve starts accepting on l in a new goroutine; echo selects echoing
// every read back instead of only counting it.
func Serve(l net.Listener, echo bool) *Server {
	s := &Server{l: l, echo: echo, conn: make(map[net.Conn]struct{})}
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
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conn[c] = struct{}{}
		s.Open.Add(1)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer s.forget(c)
	buf := make([]byte, BufferSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			s.Bytes.Add(uint64(n))
			if s.echo {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// forget closes c and drops it from the open set.
func (s *Server) forget(c net.Conn) {
	c.Close()
	s.mu.Lock()
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
