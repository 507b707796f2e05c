//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package transport

import (
	"errors"
	"syscall"
)

// ReusePortSupported reports whether [Config.ReusePort] works on this
// system.
const ReusePortSupported = false

// reusePort is never called here: Validate refuses Config.ReusePort.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("transport: SO_REUSEPORT is not supported on this system")
}
