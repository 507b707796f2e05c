package transport

import (
	"syscall"
	"unsafe"
)

// recvNow is recv(2) with MSG_DONTWAIT, asking for no sender address. It
// is a raw system call: with MSG_DONTWAIT it never blocks, so it needs
// none of the scheduler's bookkeeping around a call that may (a drain
// before every request of a ReceiveSync client pays it).
func recvNow(fd int, b []byte) (int, syscall.Errno) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(p), uintptr(len(b)), syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
