package codec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Issue 26 F6: a server that sends every reply twice. SRMP carries 8 bits
// of sequence number, so a duplicate that arrives after its number was
// given to a new request is that request's reply as far as the wire can
// tell. The client gives out the number that has been free longest, so a
// number whose reply came is given out again only after the 255 − n free
// before it (n in flight): a copy that follows its original within
// 256 − 2n other replies (128 at 64 in flight; the n − 1 others that may
// have had their reply without their waiter having freed the number yet
// count against it) lands on nothing and is dropped.

// dupShape is how the hostile server answers.
type dupShape struct {
	name string
	lag  bool // send the duplicates of one write behind the replies of the next, else each right behind its reply
	slow bool // hold a quarter of the requests until 64 to 319 other replies have gone (a server whose calls take varied times)
}

// The shapes: each reply's copy right behind it; the copies of one write
// behind the next write's replies, with a quarter of the requests answered
// late (so that a number comes free long after its neighbours). With n in
// flight a copy then follows at most 2n − 1 other replies.
var dupShapes = []dupShape{
	{name: "together"},
	{name: "lagging-slow", lag: true, slow: true},
}

// duplicatingServer answers every request with its payload, twice. It
// answers in rounds: a round takes the requests read since the last one
// (or, when none came, ticks while requests are held), answers those due
// in one write in a random order, and sends their copies with them or with
// the next round's write.
func duplicatingServer(t *testing.T, shape dupShape) string {
	addr, _ := hostileServer(t, func(p *hostilePeer) {
		reqs := make(chan srmpIn, 256)
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			defer close(reqs)
			for {
				req, err := p.next()
				if err != nil {
					return
				}
				reqs <- req
			}
		})
		type held struct {
			req srmpIn
			due int // answered once this many replies have been sent
		}
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		var pending []held
		var lagging []byte
		sent := 0
		add := func(req srmpIn) {
			due := sent
			if shape.slow && rng.IntN(4) == 0 {
				due += 64 + rng.IntN(256)
			}
			pending = append(pending, held{req, due})
		}
		for {
			idle := false
			if len(pending) == 0 {
				req, ok := <-reqs
				if !ok {
					return
				}
				add(req)
			} else {
				select {
				case req, ok := <-reqs:
					if !ok {
						return
					}
					add(req)
				case <-tick.C:
					idle = true
				}
			}
			for more := true; more; {
				select {
				case req, ok := <-reqs:
					if !ok {
						return
					}
					add(req)
				default:
					more = false
				}
			}
			if idle { // nothing came for a tick: what is held is all there is, answer the earliest
				first := 0
				for i, h := range pending {
					if h.due < pending[first].due {
						first = i
					}
				}
				pending[first].due = sent
			}
			rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
			var out, dup []byte
			kept := pending[:0]
			now := sent
			for _, h := range pending {
				if h.due > now {
					kept = append(kept, h)
					continue
				}
				sent++
				r := srmpOut(codec.KindReply, h.req.flag, h.req.seq, h.req.body)
				out = append(out, r...)
				if shape.lag {
					dup = append(dup, r...)
				} else {
					out = append(out, r...)
				}
			}
			pending = kept
			if len(out) == 0 {
				continue // the copies wait for the next replies
			}
			out, lagging = append(out, lagging...), dup
			if p.send(out) != nil {
				return
			}
		}
	})
	return addr
}

// dupProbe sends total requests with distinct payloads from inFlight
// goroutines on one connection to a duplicating server, and returns how
// many got a reply that is not their own, and the connection's counters.
func dupProbe(t *testing.T, mode transport.ReceiveMode, shape dupShape, inFlight, total int) (wrong int64, st codec.MatchStats) {
	t.Helper()
	addr := duplicatingServer(t, shape)
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: 10 * time.Second}, mode)
	var next, bad atomic.Int64
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(total) {
					return
				}
				body := fmt.Sprintf("request %d", i)
				r, err := c.RequestBytes(context.Background(), codec.FlagPacket, []byte(body))
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				if string(r.PayloadBytes()) != body {
					bad.Add(1)
				}
				r.Release()
			}
		})
	}
	wg.Wait()
	return bad.Load(), c.Conn().Stats()
}

// 5,000 requests, 1, 64 and 255 in flight, both client modes, both
// shapes: at 64 in flight or fewer no duplicate reaches another request
// (at main, which gave out numbers in turn, 3–22 of 5,000 did with the
// copies lagging and calls of varied length), and MatchStats.Reused stays
// 0. At 255 (every number but one taken) a number is given out again as
// soon as it is free, and a copy not right behind its original can reach
// the next request on it: the rate is logged (docs/reliability.md has the
// figures), and Reused counts those requests.
func TestDuplicatedRepliesNeverReachALaterRequest(t *testing.T) {
	const total = 5000
	for _, m := range clientModes {
		for _, shape := range dupShapes {
			for _, inFlight := range []int{1, 64, 255} {
				t.Run(fmt.Sprintf("%s/%s/in-flight=%d", m.name, shape.name, inFlight), func(t *testing.T) {
					leakcheck.Check(t)
					wrong, st := dupProbe(t, m.mode, shape, inFlight, total)
					t.Logf("%d of %d replies not the request's own; %+v", wrong, total, st)
					if st.InFlight != 0 {
						t.Errorf("%d numbers still taken at the end", st.InFlight)
					}
					if inFlight > 64 {
						if st.Reused == 0 {
							t.Error("Reused = 0 at 255 in flight")
						}
						return
					}
					if wrong > 0 {
						t.Errorf("%d of %d requests got another request's reply", wrong, total)
					}
					if st.Reused != 0 {
						t.Errorf("Reused = %d at %d in flight, want 0", st.Reused, inFlight)
					}
				})
			}
		}
	}
}
