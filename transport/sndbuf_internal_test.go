//go:build unix

package transport

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// A message larger than the configured SO_SNDBUF grows the buffer to the
// message size, capped by MaxSocketSendBuffer; with SocketSendBuffer unset
// the OS keeps autotuning and lifenet never touches the option.
func TestSendBufferGrowsForLargeMessages(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name          string
		set, max, msg int
		want          int // SO_SNDBUF lifenet set last (0: untouched)
	}{
		{"grows to the message", 16 << 10, 1 << 20, 256 << 10, 256 << 10},
		{"capped", 16 << 10, 64 << 10, 256 << 10, 64 << 10},
		{"small message keeps it", 16 << 10, 1 << 20, 8 << 10, 16 << 10},
		{"OS autotuning left alone", 0, 1 << 20, 256 << 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), "tcp", startSink(t), ClientConfig{Config: Config{SocketSendBuffer: tc.set, MaxSocketSendBuffer: tc.max}}, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := kernelSendBuffer(t, c.Session())
			if err := c.Session().Send(packet.Get(tc.msg)); err != nil {
				t.Fatal(err)
			}
			w := c.Session().out.(*streamSender)
			if w.sndbuf != tc.want {
				t.Fatalf("sndbuf %d, want %d", w.sndbuf, tc.want)
			}
			if tc.set == 0 {
				return // autotuning may grow the kernel's figure on its own
			}
			after := kernelSendBuffer(t, c.Session())
			if grew := after > before; grew != (tc.want > tc.set) {
				t.Fatalf("kernel SO_SNDBUF %d -> %d; growth expected: %v", before, after, tc.want > tc.set)
			}
		})
	}
}

// startSink accepts one connection and discards what it reads.
func startSink(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c)
		c.Close()
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

func kernelSendBuffer(t *testing.T, s *Session) int {
	return sockopt(t, s, syscall.SOL_SOCKET, syscall.SO_SNDBUF)
}

// sockopt reads an integer socket option of a session's TCP connection.
func sockopt(t *testing.T, s *Session, level, opt int) int {
	raw, err := tcpOf(s.conn).(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	raw.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), level, opt) })
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// A client's default NoDelayAuto keeps Nagle's algorithm for small writes
// and turns it off at the first message of AutoNoDelaySize; an explicit
// NoDelayOff keeps it on whatever the size.
func TestNoDelayAutoTurnsOffNagleForLargeMessages(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name      string
		mode      NoDelay
		wantSmall bool // TCP_NODELAY after a small message
		wantLarge bool // after a large one
	}{
		{"default (auto)", NoDelayDefault, false, true},
		{"off", NoDelayOff, false, false},
		{"on", NoDelayOn, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), "tcp", startSink(t), ClientConfig{Config: Config{NoDelay: tc.mode}}, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := c.Session()
			s.Send(packet.Get(AutoNoDelaySize - 1))
			if got := noDelayOf(t, s); got != tc.wantSmall {
				t.Fatalf("after a small message: TCP_NODELAY %v, want %v", got, tc.wantSmall)
			}
			s.Send(packet.Get(AutoNoDelaySize))
			if got := noDelayOf(t, s); got != tc.wantLarge {
				t.Fatalf("after a large message: TCP_NODELAY %v, want %v", got, tc.wantLarge)
			}
		})
	}
}

func noDelayOf(t *testing.T, s *Session) bool {
	return sockopt(t, s, syscall.IPPROTO_TCP, syscall.TCP_NODELAY) != 0
}
