package rpcport_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// A WebSocket client that pipelines SRMP requests and reads the replies
// slowly, but reads, is not cut as an expired partial frame: the bytes the
// gateway holds are unread because the reading goroutine is blocked
// writing the replies of the frames before them. (Over raw SRMP and HTTP
// the same client is served.)
func TestWebSocketSlowReaderOfPipelinedReplies(t *testing.T) {
	r := attack(t, rpc.Config{}, nil)
	closed0 := r.srv.Transport().Stats().Closed
	rc := r.dial()
	rc.c.(*net.TCPConn).SetReadBuffer(16 << 10)
	if err := rc.wsOpen(); err != nil {
		t.Fatal(err)
	}
	one := wsMsg(srmpFrame(b0Request, 1, rawBody([]byte("Bench/EchoPacket"), bytes.Repeat([]byte("x"), 1000))))
	go rc.write(bytes.Repeat(one, 4<<20/len(one)))
	start := time.Now()
	var got int64
	buf := make([]byte, 2048)
	for time.Since(start) < 2*codec.DefaultExpire {
		rc.deadline(patience)
		n, err := rc.r.Read(buf)
		got += int64(n)
		if err != nil {
			t.Fatalf("after %v and %d bytes read at ~200 KB/s: %v (closed: %v)", time.Since(start), got, err, r.srv.Transport().Stats().Closed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.srv.Transport().Stats().Closed[transport.ReasonProtocol] - closed0[transport.ReasonProtocol]; n != 0 {
		t.Errorf("%d protocol closes", n)
	}
	r.end("WebSocket slow reader of pipelined replies", "%d bytes read in %v", got, time.Since(start))
}
