//go:build !unix

package transport_test

// cpuNanos is not measured here: the benchmarks' CPU metrics read 0.
func cpuNanos() int64 { return 0 }
