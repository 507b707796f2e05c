package rpc_test

import (
	"net"
	"syscall"
	"testing"
	"unsafe"

	"github.com/lifenet/lifenet/internal/baseline"
)

// benchBareDrain is impl=bare with what a client needs to notice, before
// each request, a server that closed or sent unasked since its last reply:
// one recv(2) with MSG_DONTWAIT on the socket, as a raw system call, which
// is what the rpc client's drain makes (codec's lead.drain,
// transport.Client.ReceiveBuffered). Its count over impl=bare's is that
// check's share of the floor (docs/perf/rpc.md, "The client's cost").
func benchBareDrain(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	must(b, err)
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	must(b, err)
	req, buf := srmpRequest("Bench/NoArg"), make([]byte, 64<<10)
	var drained int
	drain := func(fd uintptr) {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), syscall.MSG_DONTWAIT, 0, 0)
		if e == 0 {
			drained += int(n)
		}
	}
	call := func() {
		if err := raw.Control(drain); err != nil {
			b.Fatal(err)
		}
		if err := baseline.Call(c, baseline.SRMP, req, buf); err != nil {
			b.Fatal(err)
		}
	}
	call()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call()
	}
	if drained != 0 {
		b.Fatalf("the drain read %d bytes nobody asked for", drained)
	}
}
