package rpcport_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// Every byte a partial HTTP request or WebSocket frame holds counts in
// MaxPartialBytes, as allocated: 150 connections each send the head of a
// 9 MiB request (HTTP: its Content-Length; WebSocket: a frame holding an
// SRMP request of 9 MiB) and 2 MiB of it, then hold. What is counted stays
// within the cap (256 MiB), connections past it are refused (an HTTP 503,
// a closed WebSocket), and the process's RSS grows by at most the cap +
// 100 MB.
func TestPartialHoldersStayWithinTheCap(t *testing.T) {
	const capBytes = 256 << 20
	holders := size(150, 30, 150)
	for _, kind := range []string{"http", "websocket"} {
		t.Run(kind, func(t *testing.T) {
			r := attack(t, rpc.Config{MaxPartialBytes: capBytes}, nil)
			const declared, sent = 9 << 20, 2 << 20
			var unit []byte
			if kind == "http" {
				head := fmt.Sprintf("POST /Bench/EchoPacket HTTP/1.1\r\nHost: rpcport\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", declared)
				unit = append([]byte(head), bytes.Repeat([]byte("h"), sent)...)
			} else {
				payload := append(srmpHeader(b0Request, 1, declared), bytes.Repeat([]byte("w"), sent)...)
				for i := range payload {
					payload[i] ^= wsMask[i%4]
				}
				unit = append(wsHeader(0x80|opBinary, uint64(len(srmpHeader(b0Request, 1, declared))+declared)), payload...)
			}
			var wg sync.WaitGroup
			for _, rc := range r.dialMany(holders, 20) {
				wg.Go(func() {
					if kind == "websocket" && rc.wsOpen() != nil {
						return
					}
					rc.write(unit) // the server may refuse before it is all written
				})
			}
			wg.Wait()
			var held int64
			waitFor(t, "the units read", func() bool { // until what is counted stops growing
				before := r.srv.Stats().PartialBytes
				time.Sleep(200 * time.Millisecond)
				held = r.srv.Stats().PartialBytes
				return held == before && held > 0
			})
			f := r.end("partial holders", "%d %s connections each holding 2 MiB of a 9 MiB unit: %d bytes counted (cap %d)", holders, kind, held, capBytes)
			if held > capBytes {
				t.Errorf("%d bytes counted, past the cap %d", held, capBytes)
			}
			if grew := f.RSSPeak - min(f.RSSPeak, f.RSSBase); grew > capBytes+100<<20 {
				t.Errorf("RSS grew %s, past the cap + 100 MB", mib(grew))
			}
			t.Logf("FIGURES partial holders (%s): %s", kind, strings.TrimSpace(f.String()))
		})
	}
}
