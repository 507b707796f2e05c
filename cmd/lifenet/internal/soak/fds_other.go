//go:build !linux

package soak

// openFDs returns -1: open descriptors are counted on Linux only (from
// /proc/self/fd).
func openFDs() int { return -1 }
