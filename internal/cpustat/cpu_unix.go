//go:build unix

package cpustat

import "syscall"

// Seconds is this process's user+system CPU time.
func Seconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
