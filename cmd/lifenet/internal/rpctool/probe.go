package rpctool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// silenceLimit bounds the first contact of call and rpcload with a server:
// a peer that has sent nothing by then is reported, not waited for for
// the call's whole timeout (15 s). It is kept under 2 s, the bound a user
// waits for that answer.
const silenceLimit = 1500 * time.Millisecond

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
// that has sent no byte at all by limit fails it with [ErrSilentPeer]; one
// that has sent something, but not yet its answer, passes (a slow server:
// the calls' own timeout bounds it). cl must be an SRMP client (not
// http://). The library's calls have no such bound: this is the command
// line's first contact only.
func probe(ctx context.Context, cl *rpc.Client, limit time.Duration) error {
	start := time.Now()
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
				ErrSilentPeer, time.Since(start).Seconds())
		}
		if ctx.Err() == nil {
			return nil // it spoke, slowly: the calls' own timeout bounds them
		}
	}
	return err
}
