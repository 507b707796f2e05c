//go:build unix

package transport

import "syscall"

// msgTrunc is the receive flag of a datagram cut short to fit the buffer.
const msgTrunc = syscall.MSG_TRUNC
