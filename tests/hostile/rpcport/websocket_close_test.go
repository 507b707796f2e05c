package rpcport_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// validClose reports whether RFC 6455 §7.4 and the IANA registry let an
// endpoint send close code c: 1000–1003 and 1007–1014 (1004 is reserved,
// 1005, 1006 and 1015 are never sent), and 3000–4999 for libraries and
// applications.
func validClose(c int) bool {
	return c >= 1000 && c <= 1003 || c >= 1007 && c <= 1014 || c >= 3000 && c <= 4999
}

// closeCodes are the codes tried: all 65,536 in a full-size run, else
// every code up to 5,100 (every seventh to 1,100 under the race detector)
// and those around each edge of the valid ranges and the top.
func closeCodes() []int {
	if full && !raceEnabled {
		codes := make([]int, 1<<16)
		for i := range codes {
			codes[i] = i
		}
		return codes
	}
	var codes []int
	step, top := 1, 5100
	if raceEnabled {
		step, top = 7, 1100 // and every code of the edges below
	}
	for c := 0; c <= top; c += step {
		codes = append(codes, c)
	}
	for _, edge := range []int{999, 1000, 1003, 1004, 1006, 1007, 1014, 1015, 2999, 3000, 4999, 5000, 65535} {
		for c := edge - 3; c <= edge+3 && c <= 65535; c++ {
			codes = append(codes, c)
		}
	}
	return codes
}

// Issue 26 F8 at scale: a close frame with every code (or a spread of
// them), each on a connection of its own, many at once: a code an endpoint
// may send is echoed, any other (999, 1004–1006, 1015, 5000, …) fails the
// connection with 1002, and the connection ends either way.
func TestWebSocketCloseCodes(t *testing.T) {
	codes := closeCodes()
	parallel := size(32, 8, 64)
	r := attack(t, rpc.Config{}, nil)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	var echoed, refused atomic.Int64
	var mu sync.Mutex
	var bad []string
	start := time.Now()
	for _, code := range codes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := closeWith(r.addr, code)
			switch {
			case err != nil:
				mu.Lock()
				if len(bad) < 10 {
					bad = append(bad, fmt.Sprintf("close code %d: %v", code, err))
				}
				mu.Unlock()
			case validClose(code):
				echoed.Add(1)
			default:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, b := range bad {
		t.Error(b)
	}
	r.end("WebSocket close codes (F8)", "%d codes, %d connections at a time: %d valid ones echoed, %d invalid ones failed with 1002, in %v",
		len(codes), parallel, echoed.Load(), refused.Load(), took.Round(time.Millisecond))
}

// closeWith opens a WebSocket connection, closes it with code and checks
// the answer.
func closeWith(addr string, code int) error {
	rc, err := tryDialRaw(addr)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := rc.wsOpen(); err != nil {
		return err
	}
	if err := rc.write(wsClose(uint16(code), "")); err != nil {
		return err
	}
	f, err := rc.readWSClose()
	if err != nil {
		return err
	}
	want := uint16(1002)
	if validClose(code) {
		want = uint16(code)
	}
	if got := f.closeCode(); got != want {
		return fmt.Errorf("answered close %d %q, want %d", got, f.payload, want)
	}
	if _, err := rc.waitEnd(patience); err != nil {
		return err
	}
	return nil
}
