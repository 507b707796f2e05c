package transport

import "syscall"

// recvNow is recv(2) with MSG_DONTWAIT. On a stream socket the kernel
// gives no sender address, so nothing is decoded or allocated; a datagram
// socket's sender address is decoded only when a datagram was waiting.
func recvNow(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_DONTWAIT)
	return n, err
}
