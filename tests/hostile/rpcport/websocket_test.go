package rpcport_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// wsRow is bytes sent on an open WebSocket connection and what the port
// must answer: a close with one of codes, then the connection's end.
type wsRow struct {
	name  string
	send  []byte
	codes []uint16 // the close codes accepted; 0: an empty close
}

// wsBadRows are frames that break RFC 6455 (§5.2, §5.4 fragmentation,
// §5.5 control frames, §7.4 close codes), each failed with 1002 (a frame
// too large with 1002 or 1009), and close frames the port echoes.
func wsBadRows() []wsRow {
	req := srmpFrame(b0Request, 1, rawBody([]byte("Bench/NoArg"), nil))
	length := func(n uint64) []byte { // a binary frame declaring n bytes, none sent
		return append(append([]byte{0x82, 0xFF}, binary.BigEndian.AppendUint64(nil, n)...), wsMask[:]...)
	}
	proto, tooBig := []uint16{1002}, []uint16{1002, 1009}
	rows := []wsRow{
		{"length 2^63", length(1 << 63), tooBig},
		{"length 2^64-1", length(1<<64 - 1), tooBig},
		{"length 2^63-1", length(1<<63 - 1), tooBig},
		{"length MaxFrame+1", wsHeader(0x80|opBinary, codec.DefaultMaxFrame+1), tooBig},
		{"RSV1", wsFrame(0xC0|opBinary, req), proto},
		{"RSV2", wsFrame(0xA0|opBinary, req), proto},
		{"RSV3", wsFrame(0x90|opBinary, req), proto},
		{"RSV bits on a ping", wsFrame(0xF0|opPing, nil), proto},
		{"fragmented ping", wsFrame(opPing, []byte("x")), proto},
		{"ping of 126 bytes", wsFrame(0x80|opPing, make([]byte, 126)), proto},
		{"orphan continuation", wsFrame(0x80|opCont, req), proto},
		{"a binary frame inside a fragmented message", append(wsFrame(opBinary, req[:3]), wsFrame(0x80|opBinary, req)...), proto},
		{"a text frame inside a fragmented message", append(wsFrame(opBinary, req[:3]), wsFrame(0x80|opText, req[3:])...), proto},
		{"close of 1 byte", wsFrame(0x80|opClose, []byte{3}), proto},
		{"close reason not UTF-8", wsClose(1000, "\xff\xfe"), proto},
		{"close 1000 echoed", wsClose(1000, "bye"), []uint16{1000}},
		{"close 3000 echoed", wsClose(3000, ""), []uint16{3000}},
		{"close 4999 echoed", wsClose(4999, ""), []uint16{4999}},
		{"empty close echoed", wsFrame(0x80|opClose, nil), []uint16{0}},
	}
	for _, op := range []byte{3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF} {
		rows = append(rows, wsRow{fmt.Sprintf("opcode %X", op), wsFrame(0x80|op, nil), proto})
	}
	for _, code := range []uint16{0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535} {
		rows = append(rows, wsRow{fmt.Sprintf("close code %d", code), wsClose(code, ""), proto})
	}
	return rows
}

// WebSocket frames that break RFC 6455 (lengths up to 2^64-1, RSV bits,
// undefined opcodes, a continuation with no message and a data frame inside
// one, bad control frames, invalid close codes: issue 26 F8), each on
// several connections at once, get a close 1002 (1009 allowed
// for a length past the limit) and the connection's end, at once; valid
// close codes are echoed. Fragmented messages carrying SRMP across
// fragments, with a ping between them, are served. A message left
// unfinished half way through an SRMP frame, and a frame whose payload
// stops, end at Framer.Expire. A flood of pings from a client that reads
// gets every pong in order; a flood from one that never reads ends as a
// slow consumer with the heap bounded.
func TestWebSocketAttacks(t *testing.T) {
	conns := size(4, 1, 16)
	pings := size(20000, 2000, 200000)
	flooders := size(4, 2, 16)
	// A flood never read blocks the reading goroutine in a write of its
	// pongs (written as they are made, so the send queue never fills and
	// SendStallTimeout never judges it): WriteTimeout ends it, shortened
	// from 30 s here.
	writeTimeout := 3 * time.Second
	cfg := rpc.Config{Transport: transport.Config{WriteTimeout: writeTimeout}}
	expire := codec.DefaultExpire
	rows := wsBadRows()
	r := attack(t, cfg, nil)
	closed0 := r.srv.Transport().Stats().Closed
	var wg sync.WaitGroup
	var mu sync.Mutex
	worst := time.Duration(0)
	open := func() *raw {
		rc := r.dial()
		if err := rc.wsOpen(); err != nil {
			t.Fatal(err)
		}
		return rc
	}

	// Frames that break the protocol, and closes.
	for range conns {
		for _, row := range rows {
			rc := open()
			wg.Go(func() {
				start := time.Now()
				rc.write(row.send)
				f, err := rc.readWSClose()
				if err != nil {
					t.Errorf("%s: no close: %v", row.name, err)
					return
				}
				if code := f.closeCode(); !slices.Contains(row.codes, code) {
					t.Errorf("%s: close %d %q, want one of %v", row.name, code, f.payload, row.codes)
				}
				if _, err := rc.waitEnd(patience); err != nil {
					t.Errorf("%s: %v after the close", row.name, err)
				}
				mu.Lock()
				worst = max(worst, time.Since(start))
				mu.Unlock()
			})
		}
	}

	// Fragments that make whole messages, with a ping between them: served.
	req := srmpFrame(b0Request, 9, request(t, "Bench/NoArg", nil))
	frag := open()
	wg.Go(func() {
		msg := append(wsFrame(opBinary, req[:3]), wsFrame(0x80|opPing, []byte("mid"))...)
		msg = append(msg, wsFrame(opCont, req[3:7])...)
		msg = append(msg, wsFrame(0x80|opCont, req[7:])...)
		frag.write(msg)
		if f, err := frag.readWS(); err != nil || f.op != opPong || string(f.payload) != "mid" {
			t.Errorf("a ping between fragments: %+v, %v; want its pong", f, err)
		}
		if f, err := frag.readWS(); err != nil || f.op != opBinary || !bytes.Contains(f.payload, []byte("42")) {
			t.Errorf("a request in three fragments: %+v, %v; want its reply", f, err)
		}
	})

	// Unfinished: half an SRMP frame in a message never finished; a frame
	// whose payload stops half way. Both end Expire after their first byte.
	var expired []time.Duration
	for _, partial := range [][]byte{
		wsFrame(opBinary, req[:len(req)/2]),
		wsHeader(0x80|opBinary, 1<<20),
	} {
		rc := open()
		wg.Go(func() {
			start := time.Now()
			rc.write(partial)
			if _, err := rc.waitEnd(expire + 5*time.Second*slow()); err != nil {
				t.Errorf("an unfinished message or frame: %v", err)
				return
			}
			d := time.Since(start)
			mu.Lock()
			expired = append(expired, d)
			mu.Unlock()
			if d < expire-50*time.Millisecond {
				t.Errorf("an unfinished message or frame ended after %v, before Expire (%v)", d, expire)
			}
		})
	}

	// A ping flood read: every pong, in order.
	pinger := open()
	wg.Go(func() {
		go func() {
			var b []byte
			for i := range pings {
				b = append(b, wsFrame(0x80|opPing, binary.BigEndian.AppendUint32(nil, uint32(i)))...)
				if len(b) > 32<<10 || i == pings-1 {
					if pinger.write(b) != nil {
						return
					}
					b = b[:0]
				}
			}
		}()
		for i := range pings {
			f, err := pinger.readWS()
			if err != nil || f.op != opPong || binary.BigEndian.Uint32(f.payload) != uint32(i) {
				t.Errorf("pong %d of %d: %+v, %v", i, pings, f, err)
				return
			}
		}
	})

	// A ping flood never read: the connection ends by WriteTimeout, and
	// its memory with it.
	flood := bytes.Repeat(wsFrame(0x80|opPing, bytes.Repeat([]byte("p"), 125)), 400)
	var floodEnd []time.Duration
	for range flooders {
		rc := open()
		wg.Go(func() {
			start := time.Now()
			for time.Since(start) < patience && rc.write(flood) == nil {
			}
			mu.Lock()
			floodEnd = append(floodEnd, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	closed := r.srv.Transport().Stats().Closed
	var ends []string
	for reason := range closed {
		if n := closed[reason] - closed0[reason]; n > 0 {
			ends = append(ends, fmt.Sprintf("%v %d", transport.Reason(reason), n))
		}
	}
	if n := closed[transport.ReasonWriteTimeout] - closed0[transport.ReasonWriteTimeout]; n != uint64(flooders) {
		t.Errorf("%d connections ended by the write timeout, want the %d flooders that never read", n, flooders)
	}
	f := r.end("WebSocket", "%d bad frames and closes × %d conns: all refused within %s; unfinished message and frame ended at %v (Expire %v); %d pings read: every pong in order; %d flooders never reading: ended after %v (WriteTimeout %v); the server's ends: %s",
		len(rows), conns, ms(worst), roundAll(expired), expire, pings, flooders, roundAll(floodEnd), writeTimeout, strings.Join(ends, ", "))
	// A flooder holds its send queue (twice SendQueueBytes at most), its
	// receive buffer and what its socket holds.
	r.heapBound(f, uint64(flooders)*3*uint64(transport.DefaultConfig().SendQueueBytes))
}

// roundAll formats durations to the millisecond.
func roundAll(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(s, " ")
}
