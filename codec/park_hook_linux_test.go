package codec_test

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// Options.OnPark runs each time a server's connection parks (a new one
// may park before its first bytes), with that connection, on its reading
// goroutine: never while its Handler runs.
func TestOnParkRunsWhenConnParks(t *testing.T) {
	leakcheck.Check(t)
	var (
		parks    atomic.Int32
		handling atomic.Bool
		conn     atomic.Pointer[codec.Conn] // the connection OnOpen saw
	)
	opts := codec.Options{
		Pipeline: srmpPipeline(),
		OnOpen:   func(c *codec.Conn) { conn.Store(c) },
		Handler: func(c *codec.Conn, msg any) {
			handling.Store(true)
			defer handling.Store(false)
			echoSRMP(c, msg)
		},
		OnPark: func(c *codec.Conn) {
			if handling.Load() {
				t.Error("OnPark ran during the connection's Handler")
			}
			if got := conn.Load(); got != c {
				t.Errorf("OnPark got connection %p, OnOpen's is %p", c, got)
			}
			parks.Add(1)
		},
	}
	srv, addr := serveCfg(t, "tcp", transport.Config{ParkAfter: 20 * time.Millisecond}, opts)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	req := []byte{byte(codec.KindRequest)<<6 | codec.FlagBinary, 1, 2, 0, 'h', 'i'}
	for i := range int32(3) {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, len(req))
		if _, err := io.ReadFull(c, reply); err != nil || string(reply[4:]) != "hi" {
			t.Fatalf("echo %d: %q, %v", i, reply, err)
		}
		testwait.For(t, 10*time.Second, "the connection to park", func() bool {
			return srv.Transport().Stats().Parked == 1 && parks.Load() > i
		})
	}
}
