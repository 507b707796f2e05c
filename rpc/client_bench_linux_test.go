package rpc_test

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"unsafe"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/rpc"
)

// benchBareDrain is impl=bare with what a client needs to notice, before
// each request, a server that closed or sent unasked since its last reply:
// one recv(2) with MSG_DONTWAIT on the socket, as a raw system call, which
// is what the rpc client's drain makes (codec's lead.drain,
// transport.Client.ReceiveBuffered). Its count over impl=bare's is that
// check's share of the floor (docs/perf/rpc.md, "The client's cost").
func benchBareDrain(b *testing.B, addr string) {
	req := srmpRequest("Bench/NoArg")
	benchDrained(b, addr, func(c net.Conn, buf []byte) error { return baseline.Call(c, baseline.SRMP, req, buf) })
}

// benchFloor is impl=bare-drain with rpc's encoding and decoding
// (rpc.FloorCall): the least an RPC client of this wire does per call, with
// no multiplexing, timeouts or safety for concurrent callers.
func benchFloor(b *testing.B, addr string) {
	var seq uint8
	var r int32
	req := make([]byte, 0, 64)
	benchDrained(b, addr, func(c net.Conn, buf []byte) error {
		seq++
		r = 0
		if err := rpc.FloorCall(c, "Bench/NoArg", seq, req, buf, &r); err != nil || r != 42 {
			return fmt.Errorf("%d, %v", r, err)
		}
		return nil
	})
}

// benchDrained runs b.N serial calls of call over one connection to addr,
// each after a drain of what the socket holds (recv with MSG_DONTWAIT),
// which must find nothing.
func benchDrained(b *testing.B, addr string, call func(c net.Conn, buf []byte) error) {
	c, err := net.Dial("tcp", addr)
	must(b, err)
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	must(b, err)
	buf := make([]byte, 64<<10)
	var drained int
	drain := func(fd uintptr) {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), syscall.MSG_DONTWAIT, 0, 0)
		if e == 0 {
			drained += int(n)
		}
	}
	one := func() {
		if err := raw.Control(drain); err != nil {
			b.Fatal(err)
		}
		if err := call(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	one()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		one()
	}
	if drained != 0 {
		b.Fatalf("the drain read %d bytes nobody asked for", drained)
	}
}
