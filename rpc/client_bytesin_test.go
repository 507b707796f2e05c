package rpc_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// ClientStats.BytesIn tells a peer that sent nothing (a port that accepts
// and never answers) from one that answered: 0 after a timed-out call to
// the first, more after a call to a server.
func TestClientStatsBytesInTellsASilentPeer(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) { stdActions(t, s) })
	cl := dialClient(t, addr, rpc.ClientConfig{})
	if st := cl.Stats(); st.BytesIn != 0 {
		t.Errorf("before any call: BytesIn %d, want 0", st.BytesIn)
	}
	if _, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil); err != nil {
		t.Fatal(err)
	}
	if st := cl.Stats(); st.BytesIn == 0 {
		t.Errorf("after a reply: BytesIn 0, want its bytes")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			held <- c // read nothing, write nothing
		}
	}()
	silent := dialClient(t, l.Addr().String(), rpc.ClientConfig{Log: quietLog()})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := rpc.Call[int](ctx, silent, "Bench/NoArg", nil); !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("call of a silent peer: %v, want ErrTimeout", err)
	}
	if st := silent.Stats(); st.BytesIn != 0 {
		t.Errorf("after a silent peer's timeout: %+v, want BytesIn 0", st)
	}
	(<-held).Close()
}
