package transport

import (
	"errors"
	"fmt"
)

// Reason names why a session ended. Each has a counter in Stats.
type Reason uint8

// Close reasons.
const (
	ReasonNone         Reason = iota // still open
	ReasonPeerClosed                 // the peer closed the connection (EOF, reset) or sent a zero-length datagram
	ReasonLocal                      // the application called Close
	ReasonIdle                       // nothing received within IdleTimeout
	ReasonFirstByte                  // nothing received within FirstByteTimeout of connecting
	ReasonSlowConsumer               // the send queue exceeded SendQueueBytes
	ReasonWriteTimeout               // a write did not finish within WriteTimeout
	ReasonLimit                      // refused: MaxConns or MaxConnsPerIP reached
	ReasonError                      // a read or write failed
	ReasonShutdown                   // the server or client was shut down
	ReasonProtocol                   // the peer broke the protocol (bad frame, frame too large, expired partial frame)
	numReasons
)

var reasonNames = [numReasons]string{
	"open", "peer closed", "local close", "idle timeout", "first-byte timeout",
	"slow consumer", "write timeout", "connection limit", "error", "shutdown", "protocol violation",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// Errors.
var (
	// ErrClosed is returned by operations on a closed session, client or server.
	ErrClosed = errors.New("transport: closed")
	// ErrSlowConsumer is returned by Send when the session's send queue is
	// full; the session is closed with ReasonSlowConsumer.
	ErrSlowConsumer = errors.New("transport: send queue full (slow consumer)")
	// ErrReceiveTimeout is returned by Receive when ClientConfig.ReceiveTimeout
	// passed without data; the connection stays open.
	ErrReceiveTimeout = errors.New("transport: receive timed out")
)

// CloseError is why a session ended: its Reason and the underlying error,
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

// Is reports whether target is ErrClosed (every CloseError is) or
// ErrSlowConsumer for a slow-consumer close.
func (e *CloseError) Is(target error) bool {
	return target == ErrClosed || (target == ErrSlowConsumer && e.Reason == ReasonSlowConsumer)
}
