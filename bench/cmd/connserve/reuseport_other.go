//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import (
	"fmt"
	"net"
)

// listenConfig fails with errUnsupported when reusePort is set: this OS
// has no SO_REUSEPORT.
func listenConfig(reusePort bool) (*net.ListenConfig, error) {
	if reusePort {
		return nil, fmt.Errorf("--reuseport: %w", errUnsupported)
	}
	return &net.ListenConfig{}, nil
}
