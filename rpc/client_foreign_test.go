package rpc_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// A client that meets a peer speaking another protocol fails its call at
// once with an error naming what it heard, not after its timeout: an
// HTTP/1.x answer, a TLS alert, and the first bytes an HTTP/2 server sends
// (a gRPC port's SETTINGS frame). (A net/http server
// answers nothing to SRMP's bytes, waiting for a line's end: that is
// silence, which only the call's timeout ends.)
func TestCallToAForeignPeerNamesItsProtocol(t *testing.T) {
	leakcheck.Check(t)
	web := rawServer(t, []byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
	// An OpenSSL server's answer to bytes that are no ClientHello: a fatal
	// alert, decode_error (Go's crypto/tls closes without one).
	alert := rawServer(t, []byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x32})
	h2 := rawServer(t, []byte{0, 0, 0, 0x04, 0, 0, 0, 0, 0}) // an empty SETTINGS frame, as grpc-go's server sends first
	for _, c := range []struct{ name, addr, want string }{
		{"HTTP", web, "HTTP/1.x"},
		{"TLS", alert, "TLS"},
		{"HTTP/2", h2, "HTTP/2"},
	} {
		cl, err := rpc.Dial(context.Background(), "tcp://"+c.addr, rpc.ClientConfig{Log: quietLog()})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		start := time.Now()
		_, err = rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil)
		took := time.Since(start)
		cl.Close()
		if !errors.Is(err, codec.ErrNotSRMP) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrNotSRMP naming %s", c.name, err, c.want)
		}
		if took > 2*time.Second {
			t.Errorf("%s: failed after %v, want within 2 s", c.name, took)
		}
	}
}

// rawServer accepts connections and writes first to each, then holds it.
func rawServer(t *testing.T, first []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write(first)
			go func() { defer c.Close(); c.Read(make([]byte, 1<<10)); time.Sleep(100 * time.Millisecond) }()
		}
	}()
	return l.Addr().String()
}
