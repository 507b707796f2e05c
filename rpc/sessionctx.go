package rpc

import (
	"context"
	"time"
)

// sessionContext is a session seen as the parent context of its calls:
// cancelled when the session ends or the server stops, and carrying the
// session for SessionFrom. It costs a session nothing until something
// waits on it (Done: a handler watching its context, a call with a
// deadline): only then does the session make the cancellable context
// under it (liveCtx). An idle device's session, whose calls never wait,
// holds no context at all.
type sessionContext Session

// ctx returns the session as its calls' parent context.
func (ss *Session) ctx() context.Context { return (*sessionContext)(ss) }

// liveCtx is a session's cancellable context, made when first waited on.
type liveCtx struct {
	context.Context
	cancel context.CancelFunc
}

// parent is what the session's context descends from: the HTTP request's
// context, or the server's.
func (c *sessionContext) parent() context.Context {
	if c.web != nil {
		return c.web.base
	}
	return c.srv.ctx
}

// live returns the session's cancellable context, made on first use (a
// child of parent, cancelled at once when the session has ended).
func (c *sessionContext) live() *liveCtx {
	if l := c.lived.Load(); l != nil {
		return l
	}
	ctx, cancel := context.WithCancel(c.parent())
	l := &liveCtx{ctx, cancel}
	if !c.lived.CompareAndSwap(nil, l) { // another goroutine made it first
		cancel()
		return c.lived.Load()
	}
	if c.ended.Load() { // the session ended before lived was set: endContext may not have seen it
		cancel()
	}
	return l
}

func (c *sessionContext) Deadline() (time.Time, bool) { return c.parent().Deadline() }

// Done makes the session's cancellable context: a context's Done channel
// is only ever closed by its cancel. Children made from the session's
// context (context.WithCancel, WithDeadline) call it first, and then find
// that context (Value) and join it as a standard context's children.
func (c *sessionContext) Done() <-chan struct{} { return c.live().Done() }

func (c *sessionContext) Err() error {
	if l := c.lived.Load(); l != nil {
		return l.Err()
	}
	if c.ended.Load() {
		return context.Canceled
	}
	return c.parent().Err()
}

func (c *sessionContext) Value(k any) any {
	if _, ok := k.(sessionKey); ok {
		return (*Session)(c)
	}
	if l := c.lived.Load(); l != nil {
		return l.Value(k)
	}
	return c.parent().Value(k)
}

// endContext cancels the session's context: its calls' contexts end.
func (ss *Session) endContext() {
	ss.ended.Store(true)
	if l := ss.lived.Load(); l != nil { // else live, making it after this, sees ended
		l.cancel()
	}
}
