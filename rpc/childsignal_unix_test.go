//go:build unix

package rpc_test

import (
	"os/signal"
	"syscall"
)

// ignoreChildExit makes the kernel reap the bench server child with no
// SIGCHLD delivered: callgrind (scripts/instrs.sh) can die of that signal.
func ignoreChildExit() { signal.Ignore(syscall.SIGCHLD) }
