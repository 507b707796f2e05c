package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/mono"
)

// The transport's log lines. Each checks that its level is enabled before
// it formats anything, and runs per session or per event, never per
// message: with the level off a line costs one Enabled call and no
// allocation.
const (
	msgOpened     = "transport: session opened"
	msgClosed     = "transport: session closed"
	msgRefused    = "transport: connection refused"
	msgAccept     = "transport: accept failed"
	msgRead       = "transport: UDP read failed"
	msgPanic      = "transport: hook panicked"
	msgReconnect  = "transport: reconnect failed"
	msgGaveUp     = "transport: reconnecting gave up"
	msgSuppressed = "transport: log lines suppressed"
)

// Rate-limited kinds of lines: a close reason's Warn line (kind = the
// Reason), and these.
const (
	kindRefused     = int(numReasons) + iota // a connection refused at MaxConns or MaxConnsPerIP (Warn)
	kindAcceptError                          // an accept that failed for want of a resource (Error)
	kindAcceptPeer                           // an accept that failed for the peer's sake (Warn)
	kindRead                                 // a UDP read that failed (Warn)
	kindPanic                                // a hook's panic (Error)
	numKinds
)

var bg = context.Background()

// initLog sets the logger (Config.Log, else the default logger of now)
// and its rate limits. ep must be at its final address.
func (ep *endpoint) initLog() {
	ep.log = ep.cfg.Log
	if ep.log == nil {
		ep.log = slog.Default()
	}
	ep.limits = logattr.NewLimiter(numKinds, logattr.Burst, logattr.Interval, ep.logSuppressed)
}

func (ep *endpoint) enabled(l slog.Level) bool { return ep.log.Enabled(bg, l) }

// limited returns the level to write a rate-limited line of kind at: level
// while the kind's budget lasts, then Debug (if enabled: Debug shows
// every line), or false for no line.
func (ep *endpoint) limited(kind int, level slog.Level) (slog.Level, bool) {
	if ep.enabled(level) && ep.limits.Allow(kind) {
		return level, true
	}
	return slog.LevelDebug, ep.enabled(slog.LevelDebug)
}

// kindLine is the level and message of a kind's lines.
func kindLine(kind int) (slog.Level, string) {
	switch kind {
	case kindRefused:
		return slog.LevelWarn, msgRefused
	case kindAcceptError:
		return slog.LevelError, msgAccept
	case kindAcceptPeer:
		return slog.LevelWarn, msgAccept
	case kindRead:
		return slog.LevelWarn, msgRead
	case kindPanic:
		return slog.LevelError, msgPanic
	}
	return slog.LevelWarn, msgClosed
}

// logSuppressed reports the lines of kind the rate limit held back.
func (ep *endpoint) logSuppressed(kind int, n uint64) {
	level, line := kindLine(kind)
	if !ep.enabled(level) {
		return
	}
	if kind < int(numReasons) {
		ep.log.LogAttrs(bg, level, msgSuppressed, slog.String(logattr.Line, line),
			slog.String(logattr.Reason, Reason(kind).String()), slog.Uint64(logattr.Suppressed, n))
		return
	}
	ep.log.LogAttrs(bg, level, msgSuppressed, slog.String(logattr.Line, line), slog.Uint64(logattr.Suppressed, n))
}

// warnReason reports whether a close for r is a Warn line: a limit or a
// guard against hostile peers closed the session. The others (the peer or
// the application closed it, an idle timeout, a failed read or write,
// shutdown) are Debug.
func warnReason(r Reason) bool {
	switch r {
	case ReasonLimit, ReasonSlowConsumer, ReasonFirstByte, ReasonWriteTimeout, ReasonProtocol:
		return true
	}
	return false
}

// addrText is a's text, or "" for none.
func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// networkOf is a's network ("tcp", "udp", "unix"), or "".
func networkOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.Network()
}

// logOpened writes the Debug line of a session that started.
func (s *Session) logOpened() {
	if !s.ep.enabled(slog.LevelDebug) {
		return
	}
	s.ep.log.LogAttrs(bg, slog.LevelDebug, msgOpened,
		slog.Uint64(logattr.Session, s.id), slog.String(logattr.Remote, addrText(s.RemoteAddr())),
		slog.String(logattr.Network, networkOf(s.LocalAddr())), slog.String(logattr.Local, addrText(s.LocalAddr())))
}

// logClosed writes the line of a session that ended with r: Warn
// (rate-limited) for a limit's close, else Debug.
func (s *Session) logClosed(r Reason, cause error) {
	level, ok := slog.LevelDebug, false
	if warnReason(r) {
		level, ok = s.ep.limited(int(r), slog.LevelWarn)
	} else {
		ok = s.ep.enabled(slog.LevelDebug)
	}
	if !ok {
		return
	}
	a := [...]slog.Attr{
		slog.Uint64(logattr.Session, s.id), slog.String(logattr.Remote, addrText(s.RemoteAddr())),
		slog.String(logattr.Network, networkOf(s.LocalAddr())), slog.String(logattr.Reason, r.String()),
		slog.Duration(logattr.Duration, time.Duration(mono.Now()-s.created)),
		slog.Uint64(logattr.BytesIn, s.io.bytesIn.Load()), slog.Uint64(logattr.BytesOut, s.io.bytesOut.Load()),
		slog.Any(logattr.Err, cause),
	}
	n := len(a)
	if cause == nil {
		n--
	}
	s.ep.log.LogAttrs(bg, level, msgClosed, a[:n]...)
}

// logPanic writes the Error line of a hook's panic (rate-limited), with
// the stack. Call it from the deferred function that recovered v.
func (s *Session) logPanic(v any) {
	level, ok := s.ep.limited(kindPanic, slog.LevelError)
	if !ok {
		return
	}
	s.ep.log.LogAttrs(bg, level, msgPanic,
		slog.Uint64(logattr.Session, s.id), slog.String(logattr.Remote, addrText(s.RemoteAddr())),
		slog.String(logattr.Network, networkOf(s.LocalAddr())),
		slog.Any(logattr.Panic, v), slog.String(logattr.Stack, string(debug.Stack())))
}

// logRefused writes the Warn line (rate-limited) of a connection refused
// at limit.
func (ep *endpoint) logRefused(c net.Conn, limit string) {
	level, ok := ep.limited(kindRefused, slog.LevelWarn)
	if !ok {
		return
	}
	ep.log.LogAttrs(bg, level, msgRefused,
		slog.String(logattr.Remote, addrText(c.RemoteAddr())), slog.String(logattr.Network, networkOf(c.LocalAddr())),
		slog.String(logattr.Local, addrText(c.LocalAddr())), slog.String(logattr.Limit, limit))
}

// logAccept writes the line of a failed accept (rate-limited): Error
// when the server lacks a resource (descriptors, memory), which an
// operator must see to; Warn when a peer's connection failed before it
// was accepted.
func (ep *endpoint) logAccept(l net.Listener, err error, retry time.Duration) {
	kind, level := kindAcceptError, slog.LevelError
	if peerAcceptError(err) {
		kind, level = kindAcceptPeer, slog.LevelWarn
	}
	level, ok := ep.limited(kind, level)
	if !ok {
		return
	}
	ep.log.LogAttrs(bg, level, msgAccept,
		slog.String(logattr.Local, addrText(l.Addr())), slog.String(logattr.Network, networkOf(l.Addr())),
		slog.Any(logattr.Err, err), slog.Duration(logattr.Retry, retry))
}

// peerAcceptError reports whether a failed accept was one connection's
// failure (aborted or reset by the peer before it was taken, a timeout)
// rather than the server's.
func peerAcceptError(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) { // not errors.As: its target would escape, an allocation
		if t, ok := e.(interface{ Timeout() bool }); ok && t.Timeout() {
			return true
		}
	}
	return errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPROTO)
}

// logRead writes the Warn line (rate-limited) of a failed UDP read.
func (ep *endpoint) logRead(pc net.PacketConn, err error) {
	level, ok := ep.limited(kindRead, slog.LevelWarn)
	if !ok {
		return
	}
	ep.log.LogAttrs(bg, level, msgRead,
		slog.String(logattr.Local, addrText(pc.LocalAddr())), slog.String(logattr.Network, networkOf(pc.LocalAddr())),
		slog.Any(logattr.Err, err))
}

// logReconnect writes the Debug line of a failed reconnect attempt, or,
// for the last one, the Warn line of a client that gave up.
func (c *Client) logReconnect(attempt int, err error, retry time.Duration) {
	ep := &c.ep
	if attempt == c.cfg.MaxReconnect {
		if ep.enabled(slog.LevelWarn) {
			ep.log.LogAttrs(bg, slog.LevelWarn, msgGaveUp, slog.String(logattr.Remote, c.address),
				slog.String(logattr.Network, c.network), slog.Int(logattr.Attempt, attempt), slog.Any(logattr.Err, err))
		}
		return
	}
	if ep.enabled(slog.LevelDebug) {
		ep.log.LogAttrs(bg, slog.LevelDebug, msgReconnect, slog.String(logattr.Remote, c.address),
			slog.String(logattr.Network, c.network), slog.Int(logattr.Attempt, attempt), slog.Any(logattr.Err, err),
			slog.Duration(logattr.Retry, retry))
	}
}
