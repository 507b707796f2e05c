//go:build !linux

package main

import (
	"errors"
	"net"
)

func serve(net.Listener, int, bool) error {
	return errors.New("needs Linux (epoll)")
}
