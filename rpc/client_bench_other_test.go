//go:build !linux

package rpc_test

import "testing"

// benchBareDrain and benchFloor need Linux's recv(2) flags; elsewhere
// their rows are skipped.
func benchBareDrain(b *testing.B, _ string) { b.Skip("linux only") }
func benchFloor(b *testing.B, _ string)     { b.Skip("linux only") }
