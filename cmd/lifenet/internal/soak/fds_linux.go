//go:build linux

package soak

import "os"

// openFDs counts this process's open file descriptors, or returns -1 when
// it cannot.
func openFDs() int {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names) - 1 // the directory's own descriptor
}
