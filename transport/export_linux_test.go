//go:build linux

package transport

import "syscall"

// HookSendmmsg makes every sendmmsg of the process go through f, which
// gets the number of messages asked and returns how many of them the
// kernel may take, or an errno to fail the call with instead, until the
// returned function restores the plain system call.
func HookSendmmsg(f func(asked int) (limit int, errno syscall.Errno)) (restore func()) {
	sendmmsgHook.Store(&f)
	return func() { sendmmsgHook.Store(nil) }
}
