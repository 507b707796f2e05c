package transport

import "syscall"

// recvNow is recv(2) with MSG_DONTWAIT. On a stream socket the kernel
// gives no sender address, so nothing is decoded or allocated; a datagram
// socket's sender address is decoded only when a datagram was waiting.
func recvNow(fd int, b []byte) (int, syscall.Errno) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_DONTWAIT)
	if err != nil {
		e, ok := err.(syscall.Errno)
		if !ok {
			e = syscall.EIO // Recvfrom fails with an Errno; any other error is taken as one that ends the read
		}
		return 0, e
	}
	return n, 0
}
