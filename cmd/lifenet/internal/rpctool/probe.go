package rpctool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// silenceLimit bounds rpcload's first contact with a server: a peer that
// has sent nothing by then is reported, not waited for for a call's whole
// timeout (15 s). It is kept under 2 s, the bound a user waits for that
// answer.
const silenceLimit = 1500 * time.Millisecond

// call's watch (callWatched): after silenceWait without a reply and
// without a byte read, a probe of at most silenceProbe on a connection of
// its own; both together under 2 s.
const (
	silenceWait  = time.Second
	silenceProbe = 750 * time.Millisecond
)

// ErrSilentPeer: the peer accepted the connection and sent nothing at all
// in answer to a call of Api/Info, which every lifenet and NewLife server
// answers at once. The error wrapping it says how long it waited.
var ErrSilentPeer = errors.New("the peer sent nothing")

// probeAction is the call probe makes: built into every lifenet server
// (rpc's builtins) and NewLife's ApiController. A refusal (401 from a
// server that authorizes it, 404 from one that turned it off) is an
// answer too.
const probeAction = "Api/Info"

// probe makes sure cl's server speaks SRMP before the calls that count,
// whose own time may be long (an action that sleeps 5 s): a call of
// Api/Info bounded by limit. A peer that answers in another protocol fails
// it at once (codec.ErrNotSRMP names which: HTTP/1.x, TLS, HTTP/2); one
// that has sent no byte at all by limit fails it with [ErrSilentPeer]
// (since: when the wait began, for its message); one that has sent
// something, but not yet its answer, passes (a slow server: the calls' own
// timeout bounds it). cl must be an SRMP client (not http://). The
// library's calls have no such bound: this is the command line's first
// contact only.
func probe(ctx context.Context, cl *rpc.Client, limit time.Duration, since time.Time) error {
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := cl.Invoke(pctx, probeAction, nil, nil)
	var ae *rpc.APIError
	switch {
	case err == nil || errors.As(err, &ae):
		return nil
	case errors.Is(err, rpc.ErrTimeout) && !errors.Is(ctx.Err(), context.Canceled):
		if cl.Stats().BytesIn == 0 {
			return fmt.Errorf("%w in %.1f s: does it speak SRMP? (an HTTP port? call it with http://)",
				ErrSilentPeer, time.Since(since).Seconds())
		}
		if ctx.Err() == nil {
			return nil // it spoke, slowly: the calls' own timeout bounds them
		}
	}
	return err
}

// callWatched is call's call of action on cl (dialed to addr with cfg),
// its result in out, which names a silent peer within 2 s and costs a
// server that answers in time nothing more: when no reply has come after
// silenceWait and cl has read no byte, a probe on a connection of its own
// (so that a server running one call at a time answers it) tells a server
// busy with a slow action, which answers it (the call goes on, bounded by
// its own timeout), from a peer that answers nothing (the call is given
// up with [ErrSilentPeer]) or in another protocol.
func callWatched(ctx context.Context, addr string, cfg rpc.ClientConfig, cl *rpc.Client, action string, args any, out *[]byte) error {
	start := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cl.Invoke(cctx, action, args, out) }()
	timer := time.NewTimer(silenceWait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	if cl.Stats().BytesIn == 0 {
		if err := probeAddr(cctx, addr, cfg, start); err != nil {
			cancel()
			<-done
			return err
		}
	}
	return <-done
}

// probeAddr is probe on a new connection to addr, dialed and probed
// within silenceProbe. A dial that fails tells nothing of the peer's
// protocol: the call goes on.
func probeAddr(ctx context.Context, addr string, cfg rpc.ClientConfig, since time.Time) error {
	dctx, cancel := context.WithTimeout(ctx, silenceProbe)
	defer cancel()
	cl, err := rpc.Dial(dctx, addr, cfg)
	if err != nil {
		return nil
	}
	defer cl.Close()
	return probe(ctx, cl, max(time.Until(since.Add(silenceWait+silenceProbe)), silenceProbe/4), since) // a slow dial leaves the probe some time
}
