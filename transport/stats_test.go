package transport_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// SendQueue and SendQueues show what waits to be written to a peer that
// does not read: the messages queued behind the write in progress, every
// byte not yet written, and a sender waiting for room.
func TestSendQueues(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const room = 16 << 10
		cfg := transport.Config{SendQueueBytes: room, SendStallTimeout: -1, WriteTimeout: -1}
		opened := make(chan *transport.Session, 1)
		srv, err := transport.NewServer(cfg, transport.Hooks{OnOpen: func(s *transport.Session) { opened <- s }})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := memnet.Listen("stats")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		peer := dialMem(l) // never reads
		s := <-opened
		if q := srv.SendQueues(); q != (transport.QueueStats{}) {
			t.Fatalf("idle queues %+v", q)
		}
		s.EnqueueBytes(make([]byte, 1024)) // taken by a write that blocks
		synctest.Wait()
		for range 9 {
			s.EnqueueBytes(make([]byte, 1024))
		}
		if q, want := s.SendQueue(), (transport.QueueStats{Messages: 9, Bytes: 10 << 10}); q != want {
			t.Fatalf("queue %+v, want %+v", q, want)
		}
		sent := make(chan error, 1)
		go func() { sent <- s.Send(packet.Wrap(make([]byte, room))) }() // does not fit: waits
		synctest.Wait()
		if q, want := srv.SendQueues(), (transport.QueueStats{Messages: 9, Bytes: 10 << 10, Waiting: 1}); q != want {
			t.Fatalf("server's queues %+v, want %+v", q, want)
		}
		peer.Close()
		<-sent
		synctest.Wait()
		if q := srv.SendQueues(); q != (transport.QueueStats{}) {
			t.Fatalf("queues after the peer left %+v", q)
		}
	})
}

// Stats counts UDP peers apart, and the receive buffers the server holds:
// FirstReadSize per stream session that has not filled it yet, and a batch
// of 64 KiB slots per UDP socket.
func TestStatsUDPPeersAndReadBuffers(t *testing.T) {
	leakcheck.Check(t)
	const readBuf = 16 << 10
	// (No parking: a parked session holds no buffer, and a connection that
	// has sent nothing parks at once.)
	var srv *transport.Server
	var tcp, udp net.Addr
	for try := 0; ; try++ { // the UDP port of the TCP one may be another test's: a new server picks another
		var err error
		srv, err = transport.NewServer(transport.Config{ReadBufferSize: readBuf, UDPReadBatch: 1, ParkAfter: -1}, transport.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		if tcp, err = srv.Listen(context.Background(), "tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if udp, err = srv.Listen(context.Background(), "udp", "127.0.0.1:0"); err == nil {
			break
		}
		srv.Close()
		if !errors.Is(err, syscall.EADDRINUSE) || try == 4 {
			t.Fatal(err)
		}
	}
	defer srv.Close()
	if st := srv.Stats(); st.UDPPeers != 0 || st.ReadBufferBytes != 64<<10 {
		t.Fatalf("before any peer: %d UDP peers, %d receive buffer bytes, want 0 and one 64 KiB slot", st.UDPPeers, st.ReadBufferBytes)
	}
	c, err := net.Dial("tcp", tcp.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		u, err := net.Dial("udp", udp.String())
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		u.Write([]byte("x"))
	}
	testwait.For(t, 10*time.Second, "a connection and two UDP peers", func() bool { return srv.Stats().Active == 3 })
	if st := srv.Stats(); st.UDPPeers != 2 || st.ReadBufferBytes != transport.FirstReadSize+64<<10 {
		t.Fatalf("%d UDP peers, %d receive buffer bytes, want 2 and %d", st.UDPPeers, st.ReadBufferBytes, transport.FirstReadSize+64<<10)
	}
	// A read that fills the first buffer moves the session to ReadBufferSize.
	if _, err := c.Write(make([]byte, 3*transport.FirstReadSize)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the session's buffer to grow", func() bool {
		return srv.Stats().ReadBufferBytes == readBuf+64<<10
	})
}
