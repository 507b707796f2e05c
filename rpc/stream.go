package rpc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sync"

	"github.com/lifenet/lifenet/codec"
)

// streamer runs one call of a streaming action: it binds data, then hands
// each item, encoded, to send, until the items end, send fails or the
// action fails.
type streamer func(ctx context.Context, data []byte, send func(item []byte, k kind) error) error

// HandleStream registers fn as the streaming action name (NewLife actions
// returning IAsyncEnumerable): each item fn yields is one reply with the
// request's sequence number (encoded like Handle's results), and a reply
// with only the action name ends the stream. An error fn yields ends it
// with an error reply (an *APIError's code, else 500). ctx is cancelled
// when the caller's connection ends. Streams always run on a goroutine of
// their own, counted against Config.MaxInFlight (past it the call gets a
// 503 naming ErrBusy); over HTTP they answer as server-sent events (one
// `data: {"action","code","data"}` event per item, written as it is
// yielded, then `data: ` empty) and the connection closes after the last
// (a request pipelined after a streaming one is not answered).
func HandleStream[A, T any](s *Server, name string, fn func(ctx context.Context, args A) iter.Seq2[T, error]) error {
	keys := s.keys
	st := func(ctx context.Context, data []byte, send func([]byte, kind) error) error {
		var a A
		if err := bindArg(data, keys, &a); err != nil {
			return err
		}
		var buf []byte
		for item, err := range fn(ctx, a) {
			if err != nil {
				return err
			}
			var k kind
			if buf, k, err = appendResult(buf[:0], item); err != nil {
				return err
			}
			if err := send(buf, k); err != nil {
				return err
			}
		}
		return nil
	}
	a := &action{name: name, stream: st}
	a.typed(reflect.TypeFor[A](), reflect.TypeFor[T](), nil)
	a.sig += " stream"
	return s.reg.add(a)
}

// sendItem is a stream's send when an interceptor registered OnItem: each
// item written is reported to its hooks.
func (c *Invocation) sendItem(item []byte, k kind) error {
	if err := c.send(item, k); err != nil {
		return err
	}
	if k == kindNull {
		item = nil
	}
	c.onItem(true, len(item))
	return nil
}

// serveStream runs a streaming action: a reply per item, then the end.
func (s *Server) serveStream(ss *Session, req *codec.Message, b body, a *action) {
	oneWay := req.Kind == codec.KindOneWay
	m := *req // the replies of a stream carry flagStream, so that a Call that reaches it fails
	m.Flag |= flagStream
	var out []byte
	send := func(item []byte, k kind) error {
		if oneWay {
			return nil
		}
		out = appendName(out[:0], b.action)
		if k != kindNull {
			out = appendDataLen(out, len(item))
			out = append(out, item...)
		}
		if err := tooLarge("stream item", len(out), s.cfg.Framer.MaxFrame); err != nil {
			return err // the stream ends with a 413
		}
		return ss.sendReply(&m, out, false)
	}
	_, _, err := s.exec(ss.ctx(), ss, b.action, a, KindStream, b.data, "", nil, new(callDone), send)
	if oneWay || s.stopped.Load() { // a stream cut short by Close fails with its connection
		return
	}
	if err != nil {
		code, msg := s.errorReply(ss, b.action, err)
		replyError(ss, req, b.action, code, msg)
		return
	}
	ss.sendReply(&m, appendName(out[:0], b.action), false)
}

// MaxStreamBuffer is how many replies of a stream a client holds for a
// consumer that has not taken them yet.
const MaxStreamBuffer = 1024

// MaxStreamBufferBytes bounds the bytes of the replies a client holds for
// a stream's consumer (replies of up to Framer.MaxFrame each would
// otherwise allow 1024 × 10 MiB).
const MaxStreamBufferBytes = 64 << 20

// Stream calls a streaming action and returns its items in order (NewLife
// InvokeStreamAsync). The sequence ends after the server's last item, or
// with an error (an *APIError from the server, a timeout when no item came
// within the client's Timeout, ErrStreamOverflow). Breaking out of the loop
// abandons the stream: later items are dropped.
func Stream[T any](ctx context.Context, c *Client, action string, args any) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		stopped := false // yield returned false, or got an error
		item := func(m *codec.Message) (bool, error) {
			var v T
			err := decodeReply(m, &v)
			if !yield(v, err) || err != nil {
				stopped = true
				return false, err
			}
			return true, nil
		}
		var err error
		if c.chain != nil {
			err = c.intercept(ctx, KindStream, action, args, nil, item)
		} else {
			err = c.runStream(ctx, action, args, nil, item)
		}
		if err != nil && !stopped {
			var zero T
			yield(zero, err)
		}
	}
}

var errStreamEnd = errors.New("rpc: end of stream")

// streamQueue holds a stream's replies between the reading goroutine and
// the consumer.
type streamQueue struct {
	action  string
	mu      sync.Mutex
	items   []*codec.Message
	bytes   int   // the payload bytes of items
	err     error // the stream's end
	ready   chan struct{}
	dropped bool // the consumer left
}

// runStream is a stream itself, after the client's interceptors (iv;
// nil: none): it hands each item to item until the stream ends or the
// consumer stops.
func (c *Client) runStream(ctx context.Context, action string, args any, iv *Invocation, item func(*codec.Message) (bool, error)) error {
	if c.web != nil {
		return fmt.Errorf("%w: streams need a socket server", ErrAddress)
	}
	body, cn, err := c.request(ctx, nil, action, args, iv, true)
	if err != nil {
		return err
	}
	q := &streamQueue{action: action, ready: make(chan struct{}, 1)}
	if err := cn.RequestStream(ctx, FlagRPC|flagStream, body, nameLen(action), q.push); err != nil {
		return err
	}
	defer q.abandon()
	for {
		m, err := q.next(ctx)
		if errors.Is(err, errStreamEnd) {
			return nil
		}
		if err != nil {
			return err
		}
		if iv != nil && iv.onItem != nil {
			b, _ := parseBody(m.PayloadBytes(), false) // no data when it does not parse
			iv.onItem(false, len(b.data))
		}
		more, err := item(m)
		m.Release()
		if !more {
			return err
		}
	}
}

// push takes one reply (borrowed) on the reading goroutine. A stream left
// before its end (the consumer gone, or past MaxStreamBuffer) leaves its
// sequence number in quarantine: the server may still be sending.
func (q *streamQueue) push(m *codec.Message, err error) codec.StreamStep {
	q.mu.Lock()
	defer q.mu.Unlock()
	step, b, perr := codec.StreamMore, body{}, error(nil)
	if err == nil {
		b, perr = parseBody(m.PayloadBytes(), false)
	}
	switch {
	case q.dropped:
		return codec.StreamLeave
	case err != nil:
		q.err, step = callError(q.action, err, nil), codec.StreamDone
		if q.err == nil {
			q.err = errStreamEnd
		}
	case perr != nil: // not a reply body at all: it breaks the stream
		q.err, step = fmt.Errorf("rpc: stream: %w", perr), codec.StreamLeave
	case len(b.data) == 0: // a reply whose data is empty ends the stream (NewLife's client stops there)
		q.err, step = errStreamEnd, codec.StreamDone
	case len(q.items) >= MaxStreamBuffer || q.bytes+payloadLen(m) > MaxStreamBufferBytes:
		q.err, step = ErrStreamOverflow, codec.StreamLeave
	default:
		q.bytes += payloadLen(m) // before Keep, which may take the payload from m
		q.items = append(q.items, m.Keep())
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return step
}

func payloadLen(m *codec.Message) int {
	if m.Payload == nil {
		return 0
	}
	return m.Payload.Total()
}

// next returns the next reply (owned) or the stream's end.
func (q *streamQueue) next(ctx context.Context) (*codec.Message, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			m := q.items[0]
			q.items = q.items[1:]
			q.bytes -= payloadLen(m)
			q.mu.Unlock()
			return m, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, localError(q.action, ctx.Err())
		}
	}
}

// abandon drops what the consumer did not take.
func (q *streamQueue) abandon() {
	q.mu.Lock()
	q.dropped = true
	for _, m := range q.items {
		m.Release()
	}
	q.items = nil
	q.mu.Unlock()
}
