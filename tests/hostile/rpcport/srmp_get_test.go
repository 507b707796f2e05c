package rpcport_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// looksLikeHTTP is an SRMP one-way frame whose first bytes are method, a
// method of HTTP and its space: its first byte is the method's first letter
// (an SRMP one-way of flag 0x04 to 0x10), its length field the next two,
// its body's name length the one after (when the method is longer than
// three letters) and its name the rest, then "/…" up to the name's length
// in printable bytes: to the port's detector it reads as a request line
// until the data block's length, whose high bytes are zero.
func looksLikeHTTP(method string) []byte {
	p := method + " "
	b := []byte(p[:4])
	n := int(binary.LittleEndian.Uint16(b[2:]))
	var body []byte
	if len(p) > 4 {
		body = []byte(p[4:])
	} else {
		body = []byte{'/'}
	}
	nameLen := int(body[0])
	body = append(body, "/Get/"...)
	for len(body) < 1+nameLen {
		body = append(body, 'g')
	}
	body = binary.LittleEndian.AppendUint32(body[:1+nameLen], uint32(n-1-nameLen-4))
	for len(body) < n {
		body = append(body, 'd')
	}
	return append(b, body...)
}

// SRMP frames whose first bytes read "GET ", "POST ", … (one-way
// requests of flags other than NewLife's 1), on several connections at
// once, whole or a byte per write: each is taken for SRMP at its first
// binary byte and served (the catch-all action counts it), and the
// connection's next call is answered. Bytes that start like a request line
// and hold no binary byte or line end for MaxHTTPHeader are HTTP: a 431,
// and the connection ends.
func TestSRMPThatLooksLikeHTTP(t *testing.T) {
	conns := size(8, 2, 32)
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"}
	var hits atomic.Int64
	r := attack(t, rpc.Config{}, func(srv *rpc.Server) {
		handle(t, srv, "*", func(context.Context, []byte) (int, error) { hits.Add(1); return 0, nil })
	})
	var wg sync.WaitGroup
	frames := 0
	for i := range conns {
		for _, m := range methods {
			f := looksLikeHTTP(m)
			if !bytes.HasPrefix(f, []byte(m+" ")) {
				t.Fatalf("the %s frame starts %q", m, f[:8])
			}
			frames += 2
			rc := r.dial()
			wg.Go(func() {
				two := append(append([]byte(nil), f...), f...)
				if i%2 == 1 { // a byte per write up to past the name
					for k := range 80 {
						if rc.write(two[k:k+1]) != nil {
							break
						}
						time.Sleep(time.Millisecond)
					}
					two = two[80:]
				}
				if err := rc.write(two); err != nil {
					t.Errorf("%s: %v", m, err)
					return
				}
				if err := rc.serves(t); err != nil {
					t.Errorf("an SRMP stream starting %q: %v", m+" ", err)
				}
			})
		}
	}
	wg.Wait()
	// The catch-all runs on a goroutine of its own: its count may come
	// after the probe's reply.
	waitFor(t, fmt.Sprintf("the %d frames that look like HTTP served", frames), func() bool { return hits.Load() >= int64(frames) })
	if got := hits.Load(); got != int64(frames) {
		t.Errorf("%d frames that look like HTTP served, want %d", got, frames)
	}

	// A request line that never shows a binary byte nor its end.
	var worst time.Duration
	for range conns {
		rc := r.dial()
		start := time.Now()
		go rc.write([]byte("GET /" + strings.Repeat("g", 80<<10)))
		resp, err := rc.readRefusal()
		if err != nil || resp.StatusCode != 431 {
			t.Errorf("64 KiB of a request line: %v, %v; want 431", resp, err)
			continue
		}
		worst = max(worst, time.Since(start))
		if _, err := rc.waitEnd(patience); err != nil {
			t.Error(err)
		}
	}
	r.end("SRMP that looks like HTTP", "%d frames starting with the 7 methods on %d connections (half a byte per write): all served as SRMP; %d endless request lines: 431 within %s",
		frames, conns*len(methods), conns, ms(worst))
}
