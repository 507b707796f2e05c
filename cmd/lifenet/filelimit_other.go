//go:build !unix

package main

// fileLimit is 0, none known: Windows has no per-process descriptor limit
// that sockets count against.
func fileLimit() uint64 { return 0 }
