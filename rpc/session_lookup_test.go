package rpc_test

import (
	"context"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// A gateway finds a device's session by the ID it kept (Server.Session),
// pushes to it, and hears when it closes (Config.OnSessionClose), so that
// it can drop what it kept.
func TestSessionByIDAndItsClose(t *testing.T) {
	ids := make(chan uint64, 1)
	closed := make(chan uint64, 1)
	srv, addr := startServer(t, rpc.Config{OnSessionClose: func(s *rpc.Session, _ error) { closed <- s.ID() }}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Device/Hello", func(ctx context.Context, _ struct{}) (int, error) {
			ids <- rpc.SessionFrom(ctx).ID()
			return 1, nil
		}))
	})
	pushed := make(chan string, 1)
	cl := dialClient(t, addr, rpc.ClientConfig{OnPush: func(action string, _ []byte) { pushed <- action }})
	if _, err := rpc.Call[int](testCtx(t), cl, "Device/Hello", nil); err != nil {
		t.Fatal(err)
	}
	id := recv(t, ids, "the device's session ID")
	ss, ok := srv.Session(id)
	if !ok || ss.ID() != id {
		t.Fatalf("Session(%d): %v, %v", id, ss, ok)
	}
	must(t, ss.Push("Device/Wake", nil))
	if a := recv(t, pushed, "the push"); a != "Device/Wake" {
		t.Fatalf("pushed %q", a)
	}
	cl.Close()
	if got := recv(t, closed, "the session's close"); got != id {
		t.Fatalf("closed %d, want %d", got, id)
	}
	if _, ok := srv.Session(id); ok {
		t.Fatal("a closed session is still found")
	}
	if _, ok := srv.Session(id + 1000); ok {
		t.Fatal("an unknown ID is found")
	}
}
