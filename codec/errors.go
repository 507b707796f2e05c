package codec

import (
	"context"
	"errors"
	"fmt"
)

// The errors of this package, compared with errors.Is. The framing errors
// end the connection they happened on; the request errors fail one request.

// ErrConfig is wrapped by every Validate error of this package.
var ErrConfig = errors.New("codec: invalid config")

// ErrNoPipeline is returned when Options.Pipeline is nil; it wraps
// [ErrConfig].
var ErrNoPipeline = fmt.Errorf("%w: Options.Pipeline is required", ErrConfig)

// Framing errors. Each ends the connection it happened on: once a stream
// is out of step, no later byte can be trusted.
var (
	// ErrFrameTooLarge: a frame's declared length exceeds MaxFrame. It is
	// checked before any buffer is taken for the frame.
	ErrFrameTooLarge = errors.New("codec: frame exceeds the maximum size")
	// ErrFrameExpired: a frame was not complete within Expire of its
	// first byte (whether its bytes stopped or trickle in).
	ErrFrameExpired = errors.New("codec: partial frame expired")
	// ErrCorruptFrame: bytes that cannot start a valid frame.
	ErrCorruptFrame = errors.New("codec: corrupt frame")
	// ErrMemoryCap: the bytes a server holds in incomplete frames, over all
	// its connections, would pass Options.MaxPartialBytes; the connection
	// whose frame needed more ends ([Server.Reserve] returns it when the
	// bytes it would count do not fit).
	ErrMemoryCap = errors.New("codec: the server's memory for incomplete frames is used up")
	// ErrTruncated: the stream ended inside a frame.
	ErrTruncated = errors.New("codec: stream ended inside a frame")
)

// Request errors.
var (
	// ErrNoMatch: the pipeline has no framing stage of this package, so
	// nothing can pair replies with requests.
	ErrNoMatch = errors.New("codec: requests need a pipeline with an SRMP, length-field or delimiter stage")
	// ErrWrongFormat: Request on a connection whose format is not SRMP, or
	// RequestPacket on an SRMP connection.
	ErrWrongFormat = errors.New("codec: request type does not match the connection's format")
	// ErrNotRequest: Request was given a message whose [Kind] is not
	// [KindRequest] (use Write for one-way messages).
	ErrNotRequest = errors.New("codec: Request needs a message of KindRequest")
	// ErrNotSent wraps, with [ErrConnClosed], the error of a request that
	// found its connection ended before it was written, or whose write
	// failed before any of its bytes left: it never reached the peer, so a
	// new connection may carry it again. (A request pending when its
	// connection ends, or whose write failed part way, fails with
	// ErrConnClosed alone: it may have been served.)
	ErrNotSent = errors.New("codec: request not sent")
	// ErrAsyncNeedsEvents: RequestAsync or RequestStream on a ReceiveSync
	// client, where only a waiting Request reads and nothing would read
	// the replies of requests nobody waits for (see Conn.StartReceiving).
	ErrAsyncNeedsEvents = errors.New("codec: RequestAsync needs a client with a receive goroutine (not ReceiveSync)")
)

// Matching errors.
var (
	// ErrTimeout: no reply within the request timeout. It is a net.Error
	// whose Timeout reports true, and matches context.DeadlineExceeded.
	ErrTimeout error = timeoutError{}
	// ErrConnClosed: the connection ended before the reply came; pending
	// and later requests fail with it.
	ErrConnClosed = errors.New("codec: connection closed")
)

// ErrUnencoded is returned when an outbound message reaches the head of a
// pipeline without having been encoded into a *packet.Packet.
var ErrUnencoded = errors.New("codec: message reached the transport unencoded (missing encoder handler?)")

// timeoutError is [ErrTimeout]: a net.Error that is also
// context.DeadlineExceeded, so a request's timeout and its context's
// deadline are told apart only by the text.
type timeoutError struct{}

func (timeoutError) Error() string        { return "codec: request timed out" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Temporary() bool      { return true }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }
