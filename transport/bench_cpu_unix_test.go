//go:build unix

package transport_test

import "syscall"

// cpuNanos is this process's user+system CPU time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
