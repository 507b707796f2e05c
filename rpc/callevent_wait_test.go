package rpc_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
)

// CallEvent.Wait is the server's time before the handler's: over SRMP
// from the codec's hand-over of the request (routing and the spawn of its
// goroutine: more than nothing), over HTTP from net/http's (the body's
// read in it: a body sent 200 ms after the head waits that long). A
// stream's is 0.
func TestCallEventWait(t *testing.T) {
	var log eventLog
	_, addr := startServer(t, rpc.Config{OnCallDone: log.add}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/Echo", func(_ context.Context, s string) (string, error) { return s, nil }))
		must(t, rpc.HandleStream(s, "T/Count", countTo))
	})
	ctx := testCtx(t)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	if _, err := rpc.Call[string](ctx, cl, "T/Echo", "srmp"); err != nil {
		t.Fatal(err)
	}
	for _, err := range rpc.Stream[int](ctx, cl, "T/Count", 2) {
		must(t, err)
	}
	// The call's event is reported once its reply has been written, by a
	// goroutine of its own (T/Echo is not inline): the client can have the
	// reply, and the stream, before it. Wait for both events, so that the
	// HTTP call's comes third (it is reported before net/http sends the
	// answer, which it holds until the handler returns).
	testwait.For(t, 10*time.Second, "the SRMP call's and the stream's events", func() bool { return len(log.all()) == 2 })

	const pause = 200 * time.Millisecond
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	body := `"http"`
	_, err = c.Write([]byte("POST /T/Echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"))
	must(t, err)
	time.Sleep(pause) // the head is read and handed over; the body comes later
	_, err = c.Write([]byte(body))
	must(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	must(t, err)
	res.Body.Close()

	evs := log.all()
	if len(evs) != 3 {
		t.Fatalf("events %+v, want 3", evs)
	}
	// The unary call's event is reported after its reply is handed over:
	// the stream's may come before it.
	srmp, stream, web := evs[0], evs[1], evs[2]
	if srmp.Kind == rpc.KindStream {
		srmp, stream = stream, srmp
	}
	if srmp.Action != "T/Echo" || srmp.Wait <= 0 {
		t.Errorf("SRMP call: %+v, want a Wait above 0", srmp)
	}
	if stream.Kind != rpc.KindStream || stream.Wait != 0 {
		t.Errorf("stream: %+v, want Wait 0", stream)
	}
	if web.Action != "T/Echo" || web.Wait < pause*3/4 || web.Duration >= web.Wait {
		t.Errorf("HTTP call whose body came %v after its head: Wait %v, Duration %v; want the pause in Wait, not in Duration", pause, web.Wait, web.Duration)
	}
}
