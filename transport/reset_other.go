//go:build !windows

package transport

import (
	"errors"
	"syscall"
)

// peerReset reports whether err is the peer's reset of the connection, or
// a write to one it closed (EPIPE), which a read or a write may be the
// first to see.
func peerReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
