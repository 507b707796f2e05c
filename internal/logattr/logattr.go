// Package logattr names the attributes of lifenet's log lines, one set for
// every layer (transport, codec, rpc), so that a query for a session, a
// peer or an action finds the lines of all of them; and it rate-limits the
// lines a peer can cause ([Limiter]). docs/observability.md lists the keys
// and the level policy.
package logattr

import "time"

// The attribute keys. A layer adds only the keys it knows; a value is
// formatted only once the logger is known to be enabled for the line.
const (
	Session  = "session"   // uint64: the transport session's ID, unique within its server or client
	Remote   = "remote"    // string: the peer's address
	Local    = "local"     // string: the local address (a listener's, a session's)
	Network  = "network"   // string: the transport's network: "tcp", "udp", "unix" (a caller's net.Listener names its own)
	Protocol = "protocol"  // string: the application protocol above it: rpc's "srmp", "http", "websocket"
	Action   = "action"    // string: the action called (rpc)
	Code     = "code"      // int: the reply's code (rpc: 0 OK, 404, 500, …)
	Duration = "duration"  // time.Duration: how long the session or call lasted
	BytesIn  = "bytes_in"  // uint64: bytes received (a session's total; a call's request)
	BytesOut = "bytes_out" // uint64: bytes sent (a session's total; a call's reply)
	Reason   = "reason"    // string: why a session ended (transport.Reason's text: "connection limit", …)
	Err      = "err"       // error: the cause
	Panic    = "panic"     // any: a recovered panic's value
	Stack    = "stack"     // string: the panicking goroutine's stack
	Limit    = "limit"     // string: the limit that refused a connection ("MaxConns", "MaxConnsPerIP", "MaxConnsFairShare")
	Retry    = "retry"     // time.Duration: the wait before the next attempt (accept, reconnect)
	Attempt  = "attempt"   // int: the attempt's number (reconnect)

	// Suppressed is the count of lines of one kind a [Limiter] held back
	// within an interval, on the line that reports them.
	Suppressed = "suppressed"
	// Line is the message of the lines a summary reports suppressed.
	Line = "line"
)

// The rate limit of the lines a peer can cause (Warn for a peer closed by a
// limit, Error for a handler panic or a failed accept): at most Burst
// lines of one kind per Interval, then one line with the count of the
// rest when the interval ends.
const (
	Burst    = 10
	Interval = 10 * time.Second
)
