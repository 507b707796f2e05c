//go:build linux

package registry_test

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// synDrop returns the address of a listener whose accept queue is full
// (backlog 0, one connection queued and never accepted): Linux drops the
// SYNs that come to it, so a dial waits until its timeout, as one to a
// host a firewall black-holes does. It checks that a dial does time out.
func synDrop(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	must(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	must(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	must(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				t.Fatalf("filling the accept queue of %s: %v", addr, err)
			}
			return addr // the queue is full: SYNs are dropped
		}
		t.Cleanup(func() { c.Close() })
		if i == 8 {
			t.Fatalf("%s took 9 connections into a queue of backlog 0", addr)
		}
	}
}

// refusedPort returns a port bound on every IPv4 address and listening
// on none: a dial of any 127.0.0.0/8 address at it is refused, and no
// other process can listen there while the test runs.
func refusedPort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	must(t, syscall.Bind(fd, &syscall.SockaddrInet4{}))
	sa, err := syscall.Getsockname(fd)
	must(t, err)
	return sa.(*syscall.SockaddrInet4).Port
}
