package packet

import "errors"

// Panics. These mark programming errors in buffer ownership; they are values
// so that a recover can identify them with errors.Is.
var (
	// ErrReleased is the panic value when a released handle is released
	// again or, in lifenet_debug builds, used at all.
	ErrReleased = errors.New("packet: use of released Packet (double Release or use after Release)")
	// ErrOverRelease is the panic value when an owner's reference count
	// would drop below zero: it was released more times than retained.
	ErrOverRelease = errors.New("packet: buffer released more times than retained")
	// ErrShared is the panic value when an operation that needs the only
	// reference to a buffer (Detach, growing Resize) finds others.
	ErrShared = errors.New("packet: operation needs the only reference to the buffer")
	// ErrBorrowed is the panic value when a [Loan]'s view is detached, grown
	// or chained: it holds no reference to give away. Keep its bytes with
	// Keep, Share or Clone instead.
	ErrBorrowed = errors.New("packet: borrowed view (a Loan) cannot be given away; keep it with Keep, Share or Clone")
)

// Errors returned by Pipe.
var (
	// ErrClosedPipe is returned by writes after the reader closed the pipe,
	// and by reads after the reader closed it.
	ErrClosedPipe = errors.New("packet: pipe closed by reader")
	// ErrWriteAfterClose is returned by writes after CloseWrite.
	ErrWriteAfterClose = errors.New("packet: write after CloseWrite")
	// ErrAdvance is returned by Advance when the counts are out of range.
	ErrAdvance = errors.New("packet: advance out of range")
	// ErrShortPipe is returned by TakeFrame when fewer bytes are buffered
	// than asked for.
	ErrShortPipe = errors.New("packet: not enough buffered bytes")

	// ErrConfig is wrapped by every Validate error of this package.
	ErrConfig = errors.New("packet: invalid config")
)
