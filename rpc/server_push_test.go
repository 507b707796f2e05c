package rpc_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/lifenet/lifenet/rpc"
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
