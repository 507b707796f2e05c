//go:build linux || darwin

package rpc

// drainsBuffered: here a ReceiveSync connection can read what its socket
// holds without waiting (transport.Client.ReceiveBuffered), the drain
// before each request that keeps stray replies from matching it; so a
// client may read on its callers' goroutines by default (see readsOnCallers).
const drainsBuffered = true
