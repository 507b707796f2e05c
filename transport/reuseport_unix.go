//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ReusePortSupported reports whether [Config.ReusePort] works on this
// system.
const ReusePortSupported = true

// reusePort is the net.ListenConfig.Control of listeners with
// Config.ReusePort: it sets SO_REUSEPORT before the socket binds.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
