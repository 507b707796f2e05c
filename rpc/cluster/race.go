package cluster

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// raced is how one attempt of a race ended.
type raced struct {
	err error
	val reflect.Value // the attempt's own result, when the call has one
}

// race sends a call marked with Race: to one endpoint, then to a new one
// each stagger with no answer or at once when an attempt fails, up to
// Config.RaceAttempts; the first success is the call's, and the others'
// ctx is canceled (their Done says Canceled). Each attempt decodes into a
// result of its own, copied into result for the winner. It returns once
// every attempt has ended.
func (c *Client) race(ctx context.Context, stagger time.Duration, action string, args, result any) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rt reflect.Type
	if result != nil {
		rt = reflect.TypeOf(result)
		if rt.Kind() != reflect.Pointer {
			return errors.New("cluster: " + action + ": result is not a pointer")
		}
	}
	n := c.cfg.RaceAttempts
	done := make(chan raced, n)
	var used []string
	pending := 0

	// launch starts an attempt on an endpoint not yet used, if the
	// balancer gives one within a few picks.
	launch := func() error {
		info := rpc.PickInfo{Action: action, Key: rpc.BalanceKey(ctx)}
		if len(used) > 0 {
			info.Exclude = used[len(used)-1]
			info.Tried = used[:len(used):len(used)] // (the appends below copy)
		}
		for range n + 2 {
			addr, e, err := c.pick(&info)
			if err != nil {
				return err
			}
			if slices.Contains(used, addr) {
				// Every used endpoint is excluded: the balancer had no
				// other usable one (or does not honour Tried).
				c.b.Done(addr, rpc.PickResult{Canceled: true})
				e.release()
				info.Exclude = addr
				continue
			}
			used = append(used, addr)
			pending++
			go func() {
				var val reflect.Value
				var dst any
				if rt != nil {
					val = reflect.New(rt.Elem())
					dst = val.Interface()
				}
				err := c.send(rctx, addr, e, true, action, args, dst)
				done <- raced{err: err, val: val}
			}()
			return nil
		}
		return errRaceExhausted
	}

	firstErr := launch()
	if firstErr != nil {
		return firstErr
	}
	t := time.NewTimer(stagger)
	defer t.Stop()
	var errs []error
	won := false
	for pending > 0 {
		select {
		case r := <-done:
			pending--
			switch {
			case won:
			case r.err == nil:
				won = true
				c.budget.success()
				if rt != nil {
					reflect.ValueOf(result).Elem().Set(r.val.Elem())
				}
				cancel()
			default:
				errs = append(errs, r.err)
				if len(used) < n && ctx.Err() == nil && !isReply(r.err) {
					if launch() == nil {
						t.Reset(stagger)
					}
				}
			}
		case <-t.C:
			if !won && len(used) < n && launch() == nil {
				t.Reset(stagger)
			}
		}
	}
	if won {
		return nil
	}
	return errs[0]
}

// errRaceExhausted: the balancer gave only endpoints the race used
// already.
var errRaceExhausted = errors.New("cluster: no further endpoint to race")

// isReply reports a server's error reply: another endpoint would answer
// the same, so a race does not go on for it (a draining server's 503
// aside).
func isReply(err error) bool {
	var ae *rpc.APIError
	return errors.As(err, &ae) && !refusing(ae)
}
