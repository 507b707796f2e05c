//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenConfig returns a ListenConfig that sets SO_REUSEPORT on the
// socket before it binds when reusePort is set.
func listenConfig(reusePort bool) (*net.ListenConfig, error) {
	if !reusePort {
		return &net.ListenConfig{}, nil
	}
	return &net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}, nil
}
