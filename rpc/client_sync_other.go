//go:build !(linux || darwin)

package rpc

// drainsBuffered: here a ReceiveSync connection cannot read its socket
// without waiting, so it could not drain stray replies before a request;
// clients keep their receive goroutine (see readsOnCallers).
const drainsBuffered = false
