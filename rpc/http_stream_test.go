package rpc_test

import (
	"bufio"
	"context"
	"io"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// stepStream registers Events/Step: it yields 1, 2, 3, each after the
// test asks for it on next (the first at once), and reports its ctx's end
// on cancelled.
func stepStream(t *testing.T, next <-chan struct{}, cancelled chan<- struct{}) string {
	t.Helper()
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.HandleStream(srv, "Events/Step", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := 1; i <= 3; i++ {
					if i > 1 {
						select {
						case <-next:
						case <-ctx.Done():
							close(cancelled)
							return
						}
					}
					if !yield(i, nil) {
						return
					}
				}
			}
		}))
	})
	return addr
}

// readEvent reads one SSE event ("data: …" and the blank line after it).
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading an event: %q, %v", line, err)
	}
	if blank, err := r.ReadString('\n'); err != nil || blank != "\n" {
		t.Fatalf("after event %q: %q, %v; want a blank line", line, blank, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// An SSE stream's head and each event leave as the stream yields them,
// not when it ends: a live feed delivers. It used to run on the reading
// goroutine, whose writes are held until its read is handled.
func TestSSEEventsLeaveAsYielded(t *testing.T) {
	next := make(chan struct{})
	addr := stepStream(t, next, make(chan struct{}))
	rc := dialRaw(t, addr)
	rc.write([]byte("GET /Events/Step HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		t.Fatalf("no response head while the stream waits after its first event: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	for i := 1; i <= 3; i++ {
		want := `data: {"action":"Events/Step","code":0,"data":` + string(rune('0'+i)) + `}`
		if got := readEvent(t, r); got != want {
			t.Fatalf("event %d: %q, want %q", i, got, want)
		}
		if i < 3 {
			next <- struct{}{} // the stream yields the next only now
		}
	}
	if got := readEvent(t, r); got != "data: " {
		t.Fatalf("end event: %q", got)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) > 0 {
		t.Fatalf("after the end event: %q, %v; want the connection's end", rest, err)
	}
}

// When an SSE client closes its connection, the stream's ctx is cancelled.
// The stream used to occupy the reading goroutine, so nothing noticed the
// close and the stream (and connection) stayed until the server closed.
func TestSSEStreamCancelledWhenClientLeaves(t *testing.T) {
	cancelled := make(chan struct{})
	addr := stepStream(t, make(chan struct{}), cancelled)
	rc := dialRaw(t, addr)
	rc.write([]byte("GET /Events/Step HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, err := http.ReadResponse(rc.r, nil)
	must(t, err)
	readEvent(t, bufio.NewReader(resp.Body))
	rc.c.Close() // the caller leaves while the stream waits for its next event
	recv(t, cancelled, "the stream's ctx to be cancelled")
}

// An SSE response is delimited by the connection's end, so a request
// pipelined after a streaming GET is read and ignored: the events come,
// then the connection ends, with no second response.
func TestSSEPipelinedRequestIsNotAnswered(t *testing.T) {
	next := make(chan struct{}, 2)
	next <- struct{}{}
	next <- struct{}{}
	addr := stepStream(t, next, make(chan struct{}))
	rc := dialRaw(t, addr)
	rc.write([]byte("GET /Events/Step HTTP/1.1\r\nHost: x\r\n\r\nGET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, b := rc.readHTTP()
	if !resp.Close {
		t.Error("the SSE response lacks Connection: close")
	}
	if n := strings.Count(b, "data: "); n != 4 || strings.Contains(b, "HTTP/1.1") {
		t.Fatalf("body %q; want 3 events and the end, nothing after", b)
	}
	rc.expectEOF()
}
