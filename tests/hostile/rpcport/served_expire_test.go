package rpcport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// holdArgs are Slow/Inline's arguments.
type holdArgs struct {
	Ms  int    `json:"ms"`
	Pad string `json:"pad"`
}

// Issue 26 F1 at scale: requests that arrive in two reads each, served
// inline (on the reading goroutine, as `lifenet serve`'s benchmark
// actions are) for longer than Framer.Expire, over SRMP, WebSocket and
// HTTP on many connections at once, are all answered, with no protocol
// close; and clients that read a large reply in twice Expire or more get
// all of it. Expiry is for bytes not yet framed, never for a request being
// served or a reply being written. Expire is 2 s here (the default 5 s in
// a full-size run: 1 s is too near the scheduling delays of a loaded
// 2-core machine, which may hold a request's second read that long) and
// each call holds 1.25 × Expire.
func TestServedRequestsDoNotExpire(t *testing.T) {
	conns := size(12, 3, 48) // a third per protocol
	calls := size(2, 2, 3)
	readers := size(4, 2, 20)
	expire := time.Duration(size(2000, 2000, int(codec.DefaultExpire/time.Millisecond))) * time.Millisecond
	replySize := size(4<<20, 2<<20, 9<<20)
	readRate := size(1<<20, 512<<10, 400<<10) // bytes a second: the reply takes twice Expire or more to read
	cfg := rpc.Config{Framer: codec.FramerConfig{Expire: expire}}
	r := attack(t, cfg, func(srv *rpc.Server) {
		handle(t, srv, "Slow/Inline", func(ctx context.Context, a holdArgs) (int, error) {
			select {
			case <-time.After(time.Duration(a.Ms) * time.Millisecond):
			case <-ctx.Done():
			}
			return a.Ms, nil
		}, rpc.WithInline())
	})
	closed0 := r.srv.Transport().Stats().Closed
	hold := int(expire.Milliseconds() * 5 / 4)
	args := holdArgs{hold, string(bytes.Repeat([]byte("p"), 32<<10))} // big enough to come in two reads anyway
	body := request(t, "Slow/Inline", args)
	httpBody, _ := json.Marshal(args)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var served []time.Duration
	split := func(rc *raw, b []byte) error { // two writes 50 ms apart: two reads
		if err := rc.write(b[:len(b)/2]); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		return rc.write(b[len(b)/2:])
	}
	for i, rc := range r.dialMany(conns, 20) {
		proto := []string{"SRMP", "WebSocket", "HTTP"}[i%3]
		wg.Go(func() {
			if proto == "WebSocket" {
				if err := rc.wsOpen(); err != nil {
					t.Error(err)
					return
				}
			}
			start := time.Now()
			for k := range calls {
				cstart := time.Now()
				var err error
				switch proto {
				case "SRMP":
					if err = split(rc, srmpFrame(b0Request, byte(k+1), body)); err == nil {
						var f frame
						if f, err = rc.readFrame(); err == nil {
							err = wantHeld(f, hold)
						}
					}
				case "WebSocket":
					if err = split(rc, wsMsg(srmpFrame(b0Request, byte(k+1), body))); err == nil {
						var in wsIn
						if in, err = rc.readWS(); err == nil {
							var f frame
							if f, err = readSRMP(bytes.NewReader(in.payload)); err == nil {
								err = wantHeld(f, hold)
							}
						}
					}
				case "HTTP":
					req := httpReq("POST", "/Slow/Inline", []string{"Content-Type: application/json", "Content-Length: " + strconv.Itoa(len(httpBody))}, string(httpBody))
					if err = split(rc, []byte(req)); err == nil {
						resp, b, rerr := rc.readHTTP()
						switch {
						case rerr != nil:
							err = rerr
						case resp.StatusCode != 200 || b != envelope("Slow/Inline", strconv.Itoa(hold)):
							err = fmt.Errorf("answered %d %.80q", resp.StatusCode, b)
						}
					}
				}
				if err != nil {
					t.Errorf("%s, call %d of %d held %d ms: %v after %v", proto, k+1, calls, hold, err, time.Since(cstart))
					return
				}
				mu.Lock()
				served = append(served, time.Since(start))
				mu.Unlock()
			}
		})
	}

	// Slow readers of a large reply, over SRMP and WebSocket.
	payload := bytes.Repeat([]byte("r"), replySize)
	echo := srmpFrame(b0Request, 1, rawBody([]byte("Bench/EchoPacket"), payload))
	var readTimes []time.Duration
	for i, rc := range r.dialMany(readers, 20) {
		ws := i%2 == 1
		wg.Go(func() {
			if ws {
				if err := rc.wsOpen(); err != nil {
					t.Error(err)
					return
				}
				rc.write(wsMsg(echo))
			} else {
				rc.write(echo)
			}
			start := time.Now()
			want := int64(replySize + 4 + 1 + len("Bench/EchoPacket") + 8)
			if ws {
				want += 10
			}
			n, err := readSlowly(rc, want, readRate)
			if err != nil || n != want {
				t.Errorf("a slow reader (WebSocket %v) of %d bytes: got %d, %v", ws, want, n, err)
				return
			}
			mu.Lock()
			readTimes = append(readTimes, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	closed := r.srv.Transport().Stats().Closed
	if n := closed[transport.ReasonProtocol] - closed0[transport.ReasonProtocol]; n != 0 {
		t.Errorf("%d protocol closes: a request being served or a reply being written expired", n)
	}
	lo, hi := minMax(served)
	rlo, rhi := minMax(readTimes)
	r.end("served requests and replies do not expire (F1)", "Expire %v; %d connections (SRMP, WebSocket, HTTP) × %d calls in two reads, each held %d ms inline: %d of %d answered (%v–%v), 0 protocol closes; %d readers of %d B at %d KiB/s: all of it in %v–%v",
		expire, conns, calls, hold, len(served), conns*calls, lo.Round(time.Millisecond), hi.Round(time.Millisecond),
		readers, replySize, readRate>>10, rlo.Round(time.Millisecond), rhi.Round(time.Millisecond))
}

// wantHeld checks Slow/Inline's reply.
func wantHeld(f frame, hold int) error {
	rep, err := parseReply(f)
	if err != nil || rep.err || string(rep.data) != strconv.Itoa(hold) {
		return fmt.Errorf("answered %+v, %v", rep, err)
	}
	return nil
}

// readSlowly reads want bytes at about rate bytes a second.
func readSlowly(rc *raw, want int64, rate int) (int64, error) {
	const step = 50 * time.Millisecond
	chunk := rate / int(time.Second/step)
	start := time.Now()
	var n int64
	for n < want {
		rc.deadline(patience)
		k, err := io.CopyN(io.Discard, rc.r, min(int64(chunk), want-n))
		n += k
		if err != nil {
			return n, err
		}
		// Keep to the rate: sleep until n bytes are due.
		if due := start.Add(time.Duration(n) * time.Second / time.Duration(rate)); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
	}
	return n, nil
}
