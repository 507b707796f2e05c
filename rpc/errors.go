package rpc

import (
	"errors"
	"fmt"
)

// APIError is an error with a NewLife API code (NewLife ApiException). A
// handler that returns one answers with its code and message; a client
// gets one for every error reply. Compare with errors.As.
type APIError struct {
	Code    int
	Message string
}

// Error implements error.
func (e *APIError) Error() string { return fmt.Sprintf("rpc: error %d: %s", e.Code, e.Message) }

// NewError returns an *APIError with code and message.
func NewError(code int, message string) *APIError { return &APIError{Code: code, Message: message} }

// Errors of the rpc package.
var (
	// ErrArgs: a request's arguments do not fit the action's parameter;
	// the caller gets a 400 error reply.
	ErrArgs = errors.New("rpc: arguments do not fit the action's parameter")
	// ErrSignature: Register found an exported method it cannot serve, or
	// Handle was given a name NewLife cannot carry.
	ErrSignature = errors.New("rpc: unsupported action")
	// ErrDuplicate: an action name was registered twice.
	ErrDuplicate = errors.New("rpc: action already registered")
	// ErrShutdown: the server is shutting down and refuses new calls (the
	// caller gets a 503 error reply).
	ErrShutdown = errors.New("rpc: server is shutting down")
	// ErrClosed: the client is closed.
	ErrClosed = errors.New("rpc: client closed")
	// ErrNoServer: the client could not connect to any of its servers.
	ErrNoServer = errors.New("rpc: no server reachable")
	// ErrConfig: a configuration value is out of range.
	ErrConfig = errors.New("rpc: invalid config")
	// ErrPushHTTP: Session.Push on an HTTP connection, which has nowhere
	// to put a message the client did not ask for.
	ErrPushHTTP = errors.New("rpc: cannot push to an HTTP connection")
	// ErrAddress: a server address has a scheme the client cannot dial.
	ErrAddress = errors.New("rpc: unsupported server address")
)

// notFound is NewLife's 404 for an unknown action.
func notFound(action []byte) *APIError {
	return &APIError{Code: CodeNotFound, Message: "无法找到名为[" + string(action) + "]的服务！"}
}

// errorCode maps a handler's error to the code and message of its reply.
func errorCode(err error) (int32, string) {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return int32(ae.Code), ae.Message
	case errors.Is(err, ErrArgs):
		return CodeBadRequest, err.Error()
	case errors.Is(err, ErrShutdown):
		return CodeUnavailable, err.Error()
	}
	return CodeInternal, err.Error()
}
