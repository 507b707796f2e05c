// Package wstest is a WebSocket framing (RFC 6455) of the tests' own: the
// raw peers of the rpc tests build and parse frames and handshakes with it,
// byte by byte, independently of github.com/gobwas/ws, which the rpc
// package serves WebSocket with, so that a test does not check the
// library against itself.
//
// The package is deliberately small: it parses and appends frame headers,
// whole frames and close frames, masks and unmasks payloads, and builds and
// checks the opening handshake on top of net/http's request and response
// types. It keeps no connection state and does no I/O. Reassembling
// fragmented messages, validating UTF-8 in text frames, answering pings and
// deciding whether unmasked client frames are acceptable (NewLife's v11
// client sends them) are left to the caller.
//
// Buffers: every function that takes a byte slice only uses it for the
// duration of the call unless its documentation says otherwise (Parse returns
// a payload aliasing its input). Append functions follow the append
// convention: they append to dst, growing it if needed, and return the
// extended slice; they allocate only when dst lacks capacity.
package wstest
