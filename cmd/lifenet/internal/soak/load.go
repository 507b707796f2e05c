package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// callDeadline bounds every call that should succeed: generous, so that a
// loaded machine does not turn a slow answer into a failure, yet finite, so
// that a lost reply shows as an error instead of a hung worker.
const callDeadline = 30 * time.Second

// dialDeadline bounds each dial.
const dialDeadline = 10 * time.Second

// op is what one operation does.
type op int

const (
	opEcho op = iota
	opTimeout
	opPanic
	opMalformed
)

// client is one worker's connection: an rpc.Client or a codec.Client.
type client interface {
	echo(ctx context.Context, payload []byte) (Kind, error)
	slow(ctx context.Context) error
	panicCall(ctx context.Context) error
	// pending is how many request numbers the client's matchers hold now
	// (codec.MatchStats.InFlight): requests awaiting replies, and timed-out
	// ones quarantined until their late reply comes.
	pending() int
	close(c *counters)
}

// load is the workers of one run and what they share.
type load struct {
	o       *Options
	srv     *servers
	cnt     *counters
	pattern []byte // read-only source of payloads: each echo sends a slice of it at a random offset
	stop    chan struct{}
	wg      sync.WaitGroup

	// live are the clients dialled and not yet closed, for pending: a
	// churning worker replaces its client while the sampler reads them.
	// Closing takes a client out first, under mu, so the sampler never
	// reads one that is closing, and a closed client, which holds nothing,
	// is never counted.
	mu   sync.Mutex
	live map[client]struct{}
}

func newLoad(o *Options, srv *servers, cnt *counters) *load {
	r := rand.New(rand.NewPCG(o.Seed, 0x50a4))
	p := make([]byte, 2*sizeLarge)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return &load{o: o, srv: srv, cnt: cnt, pattern: p, stop: make(chan struct{}), live: map[client]struct{}{}}
}

// start dials every connection and starts its worker; it fails if a first
// dial fails (the servers are not usable), after stopping what started.
func (l *load) start(ctx context.Context) error {
	nChurn := int(float64(l.o.Conns)*l.o.ChurnFraction + 0.5)
	for i := range l.o.Conns {
		isRPC := i%2 == 0 // alternate kinds, so that churners spread over both
		c, err := l.dial(ctx, isRPC)
		if err != nil {
			l.finish()
			return err
		}
		w := &worker{
			l: l, c: c, isRPC: isRPC,
			churn: i < nChurn,
			rng:   rand.New(rand.NewPCG(l.o.Seed, uint64(i)+1)),
		}
		l.wg.Go(w.run)
	}
	return nil
}

// finish stops the workers and closes their clients.
func (l *load) finish() {
	l.halt()
	l.closeAll()
}

// halt stops the workers and waits for them. Their clients stay open, idle,
// so that what their matchers still hold can be read (pending).
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// closeAll closes every live client.
func (l *load) closeAll() {
	l.mu.Lock()
	cs := make([]client, 0, len(l.live))
	for c := range l.live {
		cs = append(cs, c)
	}
	clear(l.live)
	l.mu.Unlock()
	for _, c := range cs {
		c.close(l.cnt)
	}
}

// release closes one client.
func (l *load) release(c client) {
	l.mu.Lock()
	delete(l.live, c)
	l.mu.Unlock()
	c.close(l.cnt)
}

// pending sums the request numbers held by the live clients' matchers: a
// few atomic loads per client (an rpc.Client's also take its connection
// slot's lock, which its calls hold only to pick a connection).
func (l *load) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.live {
		n += c.pending()
	}
	return n
}

// track adds a dialled client to live.
func (l *load) track(c client) client {
	l.mu.Lock()
	l.live[c] = struct{}{}
	l.mu.Unlock()
	return c
}

func (l *load) dial(ctx context.Context, isRPC bool) (client, error) {
	ctx, cancel := context.WithTimeout(ctx, dialDeadline)
	defer cancel()
	if isRPC {
		c, err := rpc.Dial(ctx, l.srv.rpcAddr, rpc.ClientConfig{})
		if err != nil {
			return nil, err
		}
		return l.track(rpcClient{c}), nil
	}
	c, err := codec.Dial(ctx, "tcp", l.srv.codecAddr, transport.ClientConfig{}, codec.Options{Pipeline: srmpPipeline()})
	if err != nil {
		return nil, err
	}
	return l.track(codecClient{c}), nil
}

// worker drives one connection: an operation per Interval until stopped.
type worker struct {
	l     *load
	c     client
	isRPC bool
	churn bool // closes and redials every ChurnEvery operations
	rng   *rand.Rand
}

// run leaves its client open when it returns: load.closeAll closes it.
func (w *worker) run() {
	l := w.l
	timer := time.NewTimer(time.Duration(w.rng.Int64N(int64(l.o.Interval)))) // spread the first operations
	defer timer.Stop()
	next := time.Now()
	for i := 1; ; i++ {
		select {
		case <-l.stop:
			return
		case <-timer.C:
		}
		w.once()
		if w.churn && i%l.o.ChurnEvery == 0 {
			w.redial()
		}
		// Pace from a fixed schedule, but never make up for lost time in a
		// burst: a worker that fell behind starts afresh from now.
		next = next.Add(l.o.Interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		timer.Reset(time.Until(next))
	}
}

func (w *worker) redial() {
	w.l.release(w.c)
	w.c = nil
	c, err := w.l.dial(context.Background(), w.isRPC)
	for err != nil {
		w.l.cnt.add(DialError, err)
		select {
		case <-w.l.stop:
			return
		case <-time.After(w.l.o.Interval):
		}
		c, err = w.l.dial(context.Background(), w.isRPC)
	}
	w.c = c
	w.l.cnt.add(Redial, nil)
}

// pick chooses the next operation.
func (w *worker) pick() op {
	o := w.l.o
	x := w.rng.Float64()
	switch {
	case x < o.MalformedRate:
		return opMalformed
	case x < o.MalformedRate+o.TimeoutRate:
		return opTimeout
	case w.isRPC && x < o.MalformedRate+o.TimeoutRate+o.PanicRate:
		return opPanic
	}
	return opEcho
}

func (w *worker) once() {
	l := w.l
	if w.c == nil { // a redial gave up when the run stopped
		return
	}
	switch w.pick() {
	case opMalformed:
		toCodec := w.rng.IntN(2) == 0
		addr := l.srv.rpcAddr
		if toCodec {
			addr = l.srv.codecAddr
			l.cnt.malformedC.Add(1)
		} else {
			l.cnt.malformedR.Add(1)
		}
		k, err := sendMalformed(addr, w.rng.IntN(2) == 0)
		l.cnt.add(k, err)
	case opTimeout:
		ctx, cancel := context.WithTimeout(context.Background(), l.o.CallTimeout)
		err := w.c.slow(ctx)
		cancel()
		switch {
		case err == nil:
			l.cnt.add(SlowAnswered, errors.New("the slow call was answered within its deadline"))
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, codec.ErrTimeout):
			l.cnt.add(Timeout, nil)
			if !w.isRPC {
				l.cnt.timeoutC.Add(1)
			}
		default:
			l.cnt.add(CallError, err)
		}
	case opPanic:
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		err := w.c.panicCall(ctx)
		cancel()
		var ae *rpc.APIError
		switch {
		case errors.As(err, &ae) && ae.Code == rpc.CodeInternal:
			l.cnt.add(Panicked, nil)
		case err == nil:
			l.cnt.add(PanicAnswered, errors.New("the panicking action answered without an error"))
		default:
			l.cnt.add(PanicAnswered, err)
		}
	default:
		n, class := sizeSmall, 0
		switch x := w.rng.Float64(); {
		case x < shareLarge:
			n, class = sizeLarge, 2
		case x < shareLarge+shareMedium:
			n, class = sizeMedium, 1
		}
		off := w.rng.IntN(len(l.pattern) - n + 1)
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		k, err := w.c.echo(ctx, l.pattern[off:off+n])
		cancel()
		l.cnt.add(k, err)
		if err == nil {
			l.cnt.bySize[class].Add(1)
		}
	}
}

// rpcClient is an rpc.Client worker connection.
type rpcClient struct{ c *rpc.Client }

func (r rpcClient) echo(ctx context.Context, payload []byte) (Kind, error) {
	got, err := rpc.Call[[]byte](ctx, r.c, actEcho, payload)
	if err != nil {
		return CallError, err
	}
	if !bytes.Equal(got, payload) {
		return WrongReply, errWrongReply(len(payload), len(got))
	}
	return EchoRPC, nil
}

func (r rpcClient) slow(ctx context.Context) error { return r.c.Invoke(ctx, actSlow, nil, nil) }

func (r rpcClient) panicCall(ctx context.Context) error { return r.c.Invoke(ctx, actPanic, nil, nil) }

func (r rpcClient) pending() int { return r.c.Stats().InFlight }

func (r rpcClient) close(*counters) { r.c.Close() }

// codecClient is a codec.Client worker connection (SRMP).
type codecClient struct{ c *codec.Client }

func (cc codecClient) echo(ctx context.Context, payload []byte) (Kind, error) {
	m, err := cc.c.RequestBytes(ctx, codec.FlagBinary, payload)
	if err != nil {
		return CallError, err
	}
	defer m.Release()
	if got := m.PayloadBytes(); !bytes.Equal(got, payload) {
		return WrongReply, errWrongReply(len(payload), len(got))
	}
	return EchoCodec, nil
}

func (cc codecClient) slow(ctx context.Context) error {
	m, err := cc.c.RequestBytes(ctx, flagSlow, []byte("slow"))
	if err == nil {
		m.Release()
	}
	return err
}

func (cc codecClient) panicCall(context.Context) error {
	return errors.New("soak: the codec server has no panicking handler")
}

func (cc codecClient) pending() int {
	if conn := cc.c.Conn(); conn != nil {
		return conn.Stats().InFlight
	}
	return 0
}

// close closes the client and adds up what its matcher dropped: the late
// replies to timed-out requests among them.
func (cc codecClient) close(c *counters) {
	if conn := cc.c.Conn(); conn != nil {
		st := conn.Stats()
		c.unknown.Add(int64(st.Unknown))
	}
	cc.c.Close()
}

func errWrongReply(sent, got int) error {
	if sent != got {
		return fmt.Errorf("soak: reply of %d bytes to a request of %d", got, sent)
	}
	return fmt.Errorf("soak: reply of the right length (%d) with other bytes", got)
}
