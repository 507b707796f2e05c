//go:build !linux

package rpc_test

import "testing"

// benchBareDrain needs Linux's recv(2) flags; elsewhere the row is skipped.
func benchBareDrain(b *testing.B, _ string) { b.Skip("linux only") }
