//go:build !linux

package registry_test

import "testing"

// synDrop is Linux's (a full accept queue drops SYNs there); elsewhere
// the test that needs it is skipped.
func synDrop(t testing.TB) string {
	t.Helper()
	t.Skip("a SYN-dropping listener on loopback is made on Linux only")
	return ""
}
