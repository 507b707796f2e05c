package transport

import (
	"errors"
	"fmt"
)

// Errors.
var (
	// ErrClosed is returned by operations on a closed session, client or server.
	ErrClosed = errors.New("transport: closed")
	// ErrSlowConsumer is returned by a send on a session closed as a slow
	// consumer: its send queue stayed full with no byte written for
	// Config.SendStallTimeout (a sender waiting for room then fails with
	// it), or Enqueue would have taken it past twice SendQueueBytes.
	ErrSlowConsumer = errors.New("transport: send queue full (slow consumer)")
	// ErrReceiveTimeout is returned by Receive when ClientConfig.ReceiveTimeout
	// passed without data; the connection stays open. It is a net.Error
	// whose Timeout reports true (as os.ErrDeadlineExceeded is).
	ErrReceiveTimeout error = receiveTimeout{}
	// ErrNotWritten is matched by the error of a send none of whose bytes
	// left: the session was closing (or closed while the send waited for
	// room), the wait for room ended with the send's context, Enqueue found
	// twice SendQueueBytes held ([ErrSlowConsumer]), the message was too
	// large for a datagram ([ErrDatagramTooLarge]), or the write that carried
	// it failed before its first byte. A send error without it came from a
	// write that may have carried some or all of the bytes: a request sent
	// so may have run.
	ErrNotWritten = errors.New("transport: nothing written")
	// ErrDatagramTooLarge is returned by Send on a datagram (UDP) session
	// for a message larger than one datagram carries ([MaxDatagram]; 65527
	// bytes to an IPv6 peer). The session stays open.
	ErrDatagramTooLarge = errors.New("transport: message too large for a datagram")
)

// notWritten marks err as the error of a send none of whose bytes left
// ([ErrNotWritten]), keeping its text and what it wraps.
type notWritten struct{ err error }

func (e notWritten) Error() string        { return e.err.Error() }
func (e notWritten) Unwrap() error        { return e.err }
func (e notWritten) Is(target error) bool { return target == ErrNotWritten }

// ErrWoken is returned by Receive in [ReceiveSync] mode when Wake cut it
// short. The connection stays open and the next Receive reads on.
var ErrWoken = errors.New("transport: receive woken")

// ErrConfig is wrapped by every Validate error of this package.
var ErrConfig = errors.New("transport: invalid config")

// ErrHooks is returned for [Hooks] that set both NewHandler and OnReceive or
// OnClose.
var ErrHooks = errors.New("transport: Hooks set both NewHandler and OnReceive/OnClose, or one of Route and HandOff")

// CloseError is why a session ended: its [Reason] and the underlying error,
// if any. Match with errors.Is against the Reason's sentinel or the cause.
type CloseError struct {
	Reason Reason
	Err    error // the cause, or nil
}

func (e *CloseError) Error() string {
	if e.Err == nil {
		return "transport: session closed: " + e.Reason.String()
	}
	return "transport: session closed: " + e.Reason.String() + ": " + e.Err.Error()
}

func (e *CloseError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrClosed] (every [CloseError] is) or
// [ErrSlowConsumer] for a slow-consumer close.
func (e *CloseError) Is(target error) bool {
	return target == ErrClosed || (target == ErrSlowConsumer && e.Reason == ReasonSlowConsumer)
}

// PanicError is the cause of a session closed because a hook panicked.
type PanicError struct {
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("transport: hook panicked: %v", e.Value) }

// receiveTimeout is ErrReceiveTimeout.
type receiveTimeout struct{}

func (receiveTimeout) Error() string   { return "transport: receive timed out" }
func (receiveTimeout) Timeout() bool   { return true }
func (receiveTimeout) Temporary() bool { return true }

// WriteError is what a connection's Read returns for a write it made
// itself and that failed (a WebSocket connection answering a ping): the
// session ends with the write's reason (ReasonWriteTimeout, say), not a
// read's.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "write: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }
