package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// PushAll goes only to connections known to speak SRMP (raw or in
// WebSocket). One whose client has not written yet may turn out to speak
// HTTP: a push sent to it went out raw, ahead of its HTTP response, which
// the client then could not read.
func TestPushAllSkipsUndecidedConnections(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := dialRaw(t, addr) // an HTTP client that has not written yet
	waitFor(t, "the server to open the session", func() bool { return srv.Stats().Sessions == 1 })
	n, err := srv.PushAll("Note/Hello", "hi")
	if err != nil || n != 0 {
		t.Errorf("PushAll: %d, %v; want 0 (the only connection is undecided)", n, err)
	}
	if resp, b := rc.httpDo("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != http.StatusOK || b != `{"action":"Bench/NoArg","code":0,"data":42}` {
		t.Fatalf("the HTTP response after a PushAll: %d %q", resp.StatusCode, b)
	}

	// Once a client has spoken SRMP, pushes reach it.
	sc := dialRaw(t, addr)
	sc.write(srmp(b0Request, 1, body(t, "Bench/NoArg", nil)))
	sc.readFrame()
	if n, err := srv.PushAll("Note/Hello", "hi"); err != nil || n != 1 {
		t.Fatalf("PushAll: %d, %v; want 1 (the SRMP connection)", n, err)
	}
	if f := sc.readFrame(); f.b0 != b0OneWay {
		t.Fatalf("SRMP client got %02X, want a push (%02X)", f.b0, b0OneWay)
	}
}

// Session.Push names why a connection cannot take a push.
func TestPushErrorsNameTheProtocol(t *testing.T) {
	got := make(chan error, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Try/Push", func(ctx context.Context, _ struct{}) (int, error) {
			got <- rpc.SessionFrom(ctx).Push("Note/Hello", "hi")
			return 1, nil
		}))
	})
	rc := dialRaw(t, addr)
	rc.httpDo("GET /Try/Push HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := recv(t, got, "the push's error"); !errors.Is(err, rpc.ErrPushHTTP) {
		t.Fatalf("Push on an HTTP connection: %v, want ErrPushHTTP", err)
	}
}

// PushAll never waits for a peer (issue 26 F2): with 5 of 20 clients never
// reading (in memory, so a write to them blocks at once), 50 PushAll of
// 4 KiB return long before one WriteTimeout, the 15 readers get every push
// in order, and the 5 are closed as slow consumers by their own queues
// (past SendQueueBytes with nothing written for SendStallTimeout). PushAll
// used to write to each session itself and wait up to WriteTimeout on
// each client that did not read, one after another.
func TestPushAllDoesNotWaitForClientsThatDoNotRead(t *testing.T) {
	const conns, deaf, pushes = 20, 5, 50
	const writeTimeout = 2 * time.Second
	cfg := rpc.Config{Transport: transport.Config{
		SendQueueBytes:   128 << 10, // 50 pushes of 4 KiB: past the room, within twice it
		SendStallTimeout: 300 * time.Millisecond,
		WriteTimeout:     writeTimeout,
	}}
	srv, _ := startServer(t, cfg, func(srv *rpc.Server) { stdActions(t, srv) })
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	type note struct {
		N   int
		Pad string
	}
	pad := strings.Repeat("p", 4000)
	var readers sync.WaitGroup
	bad := make(chan error, conns)
	for i := range conns {
		rc := dialMem(t, l)
		rc.write(srmp(b0Request, 1, body(t, "Bench/NoArg", nil))) // speaks SRMP: pushes may go to it
		rc.readFrame()
		if i < deaf {
			continue // never reads again
		}
		readers.Go(func() {
			for k := range pushes {
				f, err := readSRMP(rc.r)
				switch {
				case err != nil:
					bad <- fmt.Errorf("reader %d, push %d: %w", i, k, err)
					return
				case f.b0 != b0OneWay || !bytes.Equal(f.payload, body(t, "Note/Seq", note{k, pad})):
					bad <- fmt.Errorf("reader %d, push %d: got %02X %.40q", i, k, f.b0, f.payload)
					return
				}
			}
		})
	}
	start := time.Now()
	for k := range pushes {
		if n, err := srv.PushAll("Note/Seq", note{k, pad}); err != nil || n < conns-deaf {
			t.Fatalf("PushAll %d: %d, %v; want at least the %d readers", k, n, err, conns-deaf)
		}
	}
	took := time.Since(start)
	readers.Wait()
	close(bad)
	for err := range bad {
		t.Error(err)
	}
	waitFor(t, "the clients that do not read to be closed as slow consumers", func() bool {
		return srv.Transport().Stats().Closed[transport.ReasonSlowConsumer] == deaf
	})
	t.Logf("%d PushAll of 4 KiB to %d clients (%d not reading): %v; closed: %v", pushes, conns, deaf, took, srv.Transport().Stats().Closed)
	if took > writeTimeout/2 {
		t.Errorf("%d PushAll took %v, want far less than one WriteTimeout (%v)", pushes, took, writeTimeout)
	}
	if st := srv.Transport().Stats(); st.Closed[transport.ReasonWriteTimeout] != 0 {
		t.Errorf("%d sessions closed by the write timeout", st.Closed[transport.ReasonWriteTimeout])
	}
}

// A client shared by eight goroutines, each calling with 2 MiB four times
// (16 MiB queued at once against the default 4 MiB of room), and one call
// the size of MaxFrame beside them: every call succeeds (issue 26 F3).
// Calls wait for room in the send queue instead of failing it, and so do
// the server's replies to a client that reads. The client used to close
// its own connection as a slow consumer, failing 30 of 32 calls.
func TestConcurrentLargeCallsOnOneClientSucceed(t *testing.T) {
	const goroutines, calls, size = 8, 4, 2 << 20
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	cl := dialClient(t, addr, rpc.ClientConfig{Timeout: time.Minute})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls+1)
	call := func(n int, fill byte) {
		data := bytes.Repeat([]byte{fill}, n)
		got, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", data)
		switch {
		case err != nil:
			errs <- fmt.Errorf("a call of %d bytes: %w", n, err)
		case !bytes.Equal(got, data):
			errs <- fmt.Errorf("a call of %d bytes got %d bytes back, not its own", n, len(got))
		}
	}
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			for range calls {
				call(size, byte(g))
			}
		})
	}
	wg.Go(func() { call(codec.DefaultMaxFrame-1<<10, 0xEE) }) // the largest frame, with room for its header and the action's name
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls of 2 MiB on %d goroutines and one of %d bytes, one client: %v", goroutines*calls, goroutines, codec.DefaultMaxFrame-1<<10, time.Since(start))
}

// A UDP peer takes pushes however the port's HTTP and WebSocket forms are
// set: its protocol comes from its socket, not from a detector.
func TestPushToUDPPeerWithHTTPOff(t *testing.T) {
	for _, cfg := range []rpc.Config{{}, {NoHTTP: true, NoWebSocket: true}} {
		t.Run(fmt.Sprintf("NoHTTP=%v", cfg.NoHTTP), func(t *testing.T) {
			pushErr := make(chan error, 1)
			_, ua := startServerUDP(t, cfg, func(srv *rpc.Server) {
				must(t, rpc.Handle(srv, "Try/Push", func(ctx context.Context, _ struct{}) (int, error) {
					pushErr <- rpc.SessionFrom(ctx).Push("Note/Hello", "hi")
					return 1, nil
				}))
			})
			pushed := make(chan string, 1)
			cl := dialClient(t, "udp://"+ua, rpc.ClientConfig{OnPush: func(action string, _ []byte) { pushed <- action }})
			if _, err := rpc.Call[int](testCtx(t), cl, "Try/Push", nil); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, pushErr, "the push's error"); err != nil {
				t.Fatalf("Push to a UDP peer: %v", err)
			}
			if a := recv(t, pushed, "the push"); a != "Note/Hello" {
				t.Fatalf("pushed %q", a)
			}
		})
	}
}
