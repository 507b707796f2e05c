package rpcport_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// trickle writes b a byte every gap until the connection fails or stop
// closes, and returns when it ended.
func (rc *raw) trickle(b []byte, gap time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(gap)
	defer t.Stop()
	for i := 0; ; i = (i + 1) % len(b) {
		if rc.write(b[i:i+1]) != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Slow HTTP peers: request lines, headers that trickle a byte every 200 ms
// and bodies that trickle after a whole head, on many connections at
// once. The first bytes must show the protocol, and a request must be
// whole, within Framer.Expire of its first byte: every
// connection ends, unanswered, between Expire and Expire plus a bound,
// while the bystanders are served throughout.
func TestHTTPSlowHeadersAndBodies(t *testing.T) {
	conns := size(100, 20, 300) // per shape: three shapes within MaxConnsPerIP (1,000; all come from 127.0.0.1)
	const gap = 200 * time.Millisecond
	expire := codec.DefaultExpire
	late := 5 * time.Second * slow() // past Expire: the timers' and the sweep's lag on a loaded machine (all 900 ended 1.7 s late once, beside other heavy jobs)
	r := attack(t, rpc.Config{}, nil)
	stop := make(chan struct{})
	var mu sync.Mutex
	ends := map[string][]time.Duration{}
	var wg sync.WaitGroup
	shapes := []struct {
		name        string
		first, rest string
		answered    bool // a 408 goes out before the end (a head was read: net/http answers it)
	}{
		{"undecided first bytes", "GET /", strings.Repeat("u", 100), false},
		{"slow headers", "POST /Bench/EchoString HTTP/1.1\r\nHost: rpcport\r\n", "X-Slow: " + strings.Repeat("s", 100), false},
		{"slow body", httpReq("POST", "/Bench/EchoString", []string{"Content-Type: application/json", "Content-Length: 1000"}, `"`), strings.Repeat("b", 998) + `"`, true},
	}
	for _, sh := range shapes {
		rcs := r.dialMany(conns, 50)
		for _, rc := range rcs {
			wg.Go(func() {
				start := time.Now()
				if rc.write([]byte(sh.first)) != nil {
					t.Errorf("%s: first write failed", sh.name)
					return
				}
				go rc.trickle([]byte(sh.rest), gap, stop)
				n, err := rc.waitEnd(expire + late)
				d := time.Since(start)
				switch {
				case err != nil:
					t.Errorf("%s: %v within %v", sh.name, err, expire+late)
				case n > 0 && !sh.answered:
					t.Errorf("%s: %d bytes answered; want the connection ended unanswered", sh.name, n)
				case n == 0 && sh.answered:
					t.Errorf("%s: ended unanswered; want a 408 first", sh.name)
				case d < expire-50*time.Millisecond:
					t.Errorf("%s: ended after %v, before Expire (%v)", sh.name, d, expire)
				}
				mu.Lock()
				ends[sh.name] = append(ends[sh.name], d)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	close(stop)
	var b strings.Builder
	for _, sh := range shapes {
		lo, hi := minMax(ends[sh.name])
		fmt.Fprintf(&b, "%s: %d ended %v–%v after their first byte; ", sh.name, len(ends[sh.name]), lo.Round(time.Millisecond), hi.Round(time.Millisecond))
	}
	f := r.end("HTTP slow headers and bodies", "%d connections per shape, a byte every %v, Expire %v: %s", conns, gap, expire, b.String())
	r.heapBound(f, uint64(len(shapes)*conns)*(256<<10)+(16<<20)) // a receive buffer each, and what its connection costs
}

// An HTTP header line of 1 MB, past MaxHTTPHeader (64 KiB), gets a 431 as
// soon as the header passes the limit, on many connections at once; a
// Content-Length of 10 GB gets a 413 from the head alone. Each connection
// then ends.
func TestHTTPHugeHeaderAndLength(t *testing.T) {
	conns := size(20, 4, 100)
	huge := []byte("GET /Bench/NoArg HTTP/1.1\r\nHost: rpcport\r\nX-Huge: " + strings.Repeat("h", 1<<20) + "\r\n\r\n")
	r := attack(t, rpc.Config{}, nil)
	var mu sync.Mutex
	var t431, t413 []time.Duration
	var wg sync.WaitGroup
	for _, rc := range r.dialMany(conns, 20) {
		wg.Go(func() {
			start := time.Now()
			go rc.write(huge) // the server may close before it is all written
			resp, err := rc.readRefusal()
			if err != nil || resp.StatusCode != 431 {
				t.Errorf("a 1 MB header line: %v, %v; want 431", resp, err)
				return
			}
			d := time.Since(start)
			if _, err := rc.waitEnd(patience); err != nil {
				t.Errorf("after the 431: %v", err)
			}
			mu.Lock()
			t431 = append(t431, d)
			mu.Unlock()
		})
	}
	for _, rc := range r.dialMany(conns, 20) {
		wg.Go(func() {
			start := time.Now()
			rc.write([]byte(httpReq("POST", "/Bench/EchoString", []string{"Content-Type: application/json", "Content-Length: 10000000000"}, `"x`)))
			resp, _, err := rc.readHTTP()
			if err != nil || resp.StatusCode != 413 {
				t.Errorf("Content-Length 10 GB: %v, %v; want 413", resp, err)
				return
			}
			d := time.Since(start)
			if _, err := rc.waitEnd(patience); err != nil {
				t.Errorf("after the 413: %v", err)
			}
			mu.Lock()
			t413 = append(t413, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	lo1, hi1 := minMax(t431)
	lo2, hi2 := minMax(t413)
	f := r.end("HTTP 1 MB header line, 10 GB Content-Length", "%d connections each: 431 in %s–%s, 413 in %s–%s", conns, ms(lo1), ms(hi1), ms(lo2), ms(hi2))
	// A connection holds at most MaxHTTPHeader of its header (and a
	// receive buffer) before its 431; the attackers' 1 MB lines are in the
	// baseline.
	r.heapBound(f, uint64(2*conns)*(256<<10)+(16<<20))
}

func minMax(ds []time.Duration) (lo, hi time.Duration) {
	for i, d := range ds {
		if i == 0 || d < lo {
			lo = d
		}
		hi = max(hi, d)
	}
	return lo, hi
}
