//go:build !unix

package main

import "time"

// cpu is 0 where the system has no getrusage: the CPU per call reads 0.
func cpu() time.Duration { return 0 }
