package codec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Shutdown lets a handler that is running finish; its reply reaches the
// client, and then the client sees its connection closed. New connections
// are refused.
func TestServerShutdownFinishesInFlight(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			started, release := make(chan struct{}), make(chan struct{})
			srv, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
				if string(msg.(*codec.Message).PayloadBytes()) == "slow" {
					close(started)
					<-release
				}
				echoSRMP(c, msg)
			}})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			r, err := c.Request(context.Background(), request("warm-up"))
			replyText(t, r, err)
			// An idle connection, which Shutdown closes at once: its end
			// shows that Shutdown is under way.
			idle := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
			r, err = idle.Request(context.Background(), request("idle"))
			replyText(t, r, err)

			type result struct {
				text string
				err  error
			}
			replied := make(chan result, 1)
			go func() {
				r, err := c.Request(context.Background(), request("slow"))
				if err != nil {
					replied <- result{err: err}
					return
				}
				replied <- result{text: string(r.PayloadBytes())}
				r.Release()
			}()
			<-started
			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				shut <- srv.Shutdown(ctx)
			}()
			select {
			case <-idle.Transport().Session().Done(): // Shutdown has begun, and waits for the handler
			case <-time.After(10 * time.Second):
				t.Fatal("Shutdown left an idle connection open")
			}
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned while a handler ran: %v", err)
			default:
			}
			close(release)
			if res := <-replied; res.err != nil || res.text != "slow" {
				t.Fatalf("in-flight request: %q, %v", res.text, res.err)
			}
			if err := <-shut; err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				t.Error("a new connection was accepted after Shutdown")
			}
			// The server closed the connection: the client's next request
			// fails, whether the client has seen the end yet (not sent) or
			// learns it waiting for the reply (a sync client, when it reads).
			r, err = c.Request(context.Background(), request("after"))
			if err == nil {
				r.Release()
				t.Fatal("request answered after Shutdown")
			}
			if !errors.Is(err, codec.ErrConnClosed) && !errors.Is(err, transport.ErrClosed) {
				t.Fatalf("request after Shutdown: %v", err)
			}
		})
	}
}

// OnOpen runs once per connection before its first message, OnClose once
// when it has ended, on servers and clients alike.
func TestOnOpenOnCloseOncePerConnection(t *testing.T) {
	leakcheck.Check(t)
	type counts struct{ open, close, handled int }
	var mu sync.Mutex
	server := map[*codec.Conn]*counts{}
	var closeErrs []error
	const conns = 3
	allClosed := make(chan struct{})
	srv, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(),
		OnOpen: func(c *codec.Conn) {
			mu.Lock()
			defer mu.Unlock()
			if server[c] == nil {
				server[c] = &counts{}
			}
			server[c].open++
		},
		OnClose: func(c *codec.Conn, err error) {
			mu.Lock()
			defer mu.Unlock()
			server[c].close++
			closeErrs = append(closeErrs, err)
			if len(closeErrs) == conns {
				close(allClosed)
			}
		},
		Handler: func(c *codec.Conn, msg any) {
			mu.Lock()
			n := server[c]
			if n == nil || n.open != 1 {
				t.Error("handler ran before OnOpen")
			} else {
				n.handled++
			}
			mu.Unlock()
			echoSRMP(c, msg)
		},
	})

	client := map[*codec.Conn]*counts{}
	copts := codec.Options{Pipeline: srmpPipeline(),
		OnOpen: func(c *codec.Conn) {
			mu.Lock()
			defer mu.Unlock()
			client[c] = &counts{open: 1}
		},
		OnClose: func(c *codec.Conn, err error) {
			mu.Lock()
			defer mu.Unlock()
			client[c].close++
		},
	}
	for i := range conns {
		mode := clientModes[i%2].mode
		c, err := codec.Dial(context.Background(), "tcp", addr, transport.ClientConfig{Mode: mode}, copts)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if client[c.Conn()] == nil {
			t.Error("OnOpen did not run before Dial returned, or with another Conn")
		}
		mu.Unlock()
		for j := range 3 {
			r, err := c.Request(context.Background(), request(fmt.Sprint(j)))
			replyText(t, r, err)
		}
		c.Close()
	}
	select {
	case <-allClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's connections did not all end")
	}
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(server) != conns || len(client) != conns {
		t.Fatalf("%d server and %d client connections, want %d", len(server), len(client), conns)
	}
	for _, n := range server {
		if *n != (counts{1, 1, 3}) {
			t.Errorf("server connection: %+v, want one open, one close, three messages", *n)
		}
	}
	for _, n := range client {
		if n.open != 1 || n.close != 1 {
			t.Errorf("client connection: %+v, want one open and one close", *n)
		}
	}
	for _, err := range closeErrs {
		var ce *transport.CloseError
		if !errors.As(err, &ce) || ce.Reason != transport.ReasonPeerClosed {
			t.Errorf("OnClose error %v, want a *transport.CloseError with ReasonPeerClosed", err)
		}
	}
}

// Over UDP every reply is one datagram: the replies to a datagram of many
// requests (small ones copied into the send buffer, larger ones encoded)
// come back one per datagram, never coalesced.
func TestUDPRepliesOneDatagramEach(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "udp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sizes := []int{0, 1, 10, 100, 511, 512, 600, 3000, 5, 7}
	var dgram []byte
	for i, n := range sizes {
		dgram = append(dgram, encodeSRMP(t, codec.KindRequest, codec.FlagBinary, uint8(i+1), body(byte(i), n))...)
	}
	dgram = append(dgram, encodeSRMP(t, codec.KindOneWay, 0, 99, []byte("no reply"))...)
	if _, err := conn.Write(dgram); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	for i, n := range sizes {
		k, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		m, err := codec.DecodeSRMP(payload(buf[:k])) // fails unless the datagram is exactly one frame
		if err != nil {
			t.Fatalf("reply datagram %d (%d bytes): %v", i, k, err)
		}
		if m.Kind != codec.KindReply || m.Seq != uint8(i+1) || !bytes.Equal(m.PayloadBytes(), body(byte(i), n)) {
			t.Errorf("reply %d: kind %d seq %d, %d bytes", i, m.Kind, m.Seq, len(m.PayloadBytes()))
		}
		m.Release()
	}
	conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if k, err := conn.Read(buf); err == nil {
		t.Errorf("unexpected datagram of %d bytes", k)
	}
	conn.Write(nil) // end the peer session
}

// An SRMP codec client over UDP: concurrent requests, blocking and async,
// each matched by sequence number.
func TestUDPClientRequests(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "udp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "udp", addr, codec.Options{Pipeline: srmpPipeline()})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				want := body(byte(g*20+i), (g*20+i)*37%1500)
				r, err := c.Request(context.Background(), codec.NewMessage(codec.KindRequest, codec.FlagBinary, 0, payload(want)))
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(r.PayloadBytes(), want) {
					t.Errorf("UDP reply of %d bytes, want %d", len(r.PayloadBytes()), len(want))
				}
				r.Release()
			}
		})
	}
	for i := range 20 {
		want := body(byte(i), i*100)
		wg.Add(1)
		err := c.RequestAsync(context.Background(), codec.NewMessage(codec.KindRequest, 0, 0, payload(want)), func(r *codec.Message, err error) {
			defer wg.Done()
			if err != nil || !bytes.Equal(r.PayloadBytes(), want) {
				t.Errorf("async UDP request %d: %v", i, err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if st := c.Conn().Stats(); st != (codec.MatchStats{}) {
		t.Fatalf("stats %+v", st)
	}
}
