package transport

import (
	"errors"
	"syscall"
)

// peerReset reports whether err is the peer's reset of the connection
// (Windows names it WSAECONNRESET, or WSAECONNABORTED once the stack gave
// up on it), which a read or a write may be the first to see.
func peerReset(err error) bool {
	return errors.Is(err, syscall.WSAECONNRESET) || errors.Is(err, syscall.WSAECONNABORTED)
}
