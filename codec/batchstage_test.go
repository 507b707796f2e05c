package codec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
)

// captureWire accepts one connection on a plain listener and returns its
// address and a function that returns every byte the connection sent,
// once the client has closed it.
func captureWire(t *testing.T) (addr string, sent func() []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	return ln.Addr().String(), func() []byte {
		select {
		case b := <-got:
			return b
		case <-time.After(30 * time.Second):
			t.Fatal("the peer never closed")
			return nil
		}
	}
}

// The frames of requests staged inside Batch are byte for byte those the
// same requests make one by one (the general path is the specification):
// the same headers, sequence numbers and payloads, in the same order,
// with a one-way message and a large request (not staged) in between.
func TestBatchedRequestsAreTheFramesOfSingleOnes(t *testing.T) {
	leakcheck.Check(t)
	send := func(batched bool) []byte {
		addr, sent := captureWire(t)
		c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
		ctx := context.Background()
		cb := func(*codec.Message, error) {} // the peer never answers: they fail at the close
		requests := func() {
			for i := range 40 {
				body := fmt.Appendf(nil, "request %d", i)
				switch i {
				case 10:
					if err := c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 0, packet.Wrap([]byte("one-way")))); err != nil {
						t.Error(err)
					}
				case 20:
					body = bytes.Repeat([]byte{'L'}, 3000) // past the size that is copied: sent as a packet, not staged
				}
				if err := c.RequestBytesAsync(ctx, codec.FlagBinary, body, cb); err != nil {
					t.Error(err)
				}
			}
		}
		if batched {
			if err := c.Batch(requests); err != nil {
				t.Fatal(err)
			}
		} else {
			requests()
		}
		c.Close()
		return sent()
	}
	one, batch := send(false), send(true)
	if len(one) == 0 || !bytes.Equal(one, batch) {
		t.Fatalf("batched requests sent %d bytes, single ones %d: they differ", len(batch), len(one))
	}
}

// Inside Batch, a goroutine's writes keep their order: a one-way message
// written after staged requests reaches the server after them, and one
// written before them, before.
func TestBatchKeepsAGoroutinesWritesInOrder(t *testing.T) {
	leakcheck.Check(t)
	var mu sync.Mutex
	var order []string
	all := make(chan struct{})
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		mu.Lock()
		order = append(order, string(m.PayloadBytes()))
		if len(order) == 4 {
			close(all)
		}
		mu.Unlock()
		echoSRMP(c, msg)
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	ctx := context.Background()
	oneWay := func(s string) {
		if err := c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 0, packet.Wrap([]byte(s)))); err != nil {
			t.Error(err)
		}
	}
	request := func(s string) {
		if err := c.RequestBytesAsync(ctx, codec.FlagString, []byte(s), func(*codec.Message, error) {}); err != nil {
			t.Error(err)
		}
	}
	if err := c.Batch(func() {
		oneWay("first")
		request("second")
		request("third")
		oneWay("fourth")
	}); err != nil {
		t.Fatal(err)
	}
	<-all
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"first", "second", "third", "fourth"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("the server got %q, want %q", order, want)
	}
}

// Requests from many goroutines, some batching, some not, more than a
// staging buffer holds, all get their own replies.
func TestBatchesFromManyGoroutinesAreAllAnswered(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	ctx := context.Background()
	const goroutines, each = 6, 30         // 180 in flight at most: under the window
	body := bytes.Repeat([]byte{'b'}, 400) // 30 × 404 bytes a batch: a batch passes the hand-over size with the others'
	var replies sync.WaitGroup
	replies.Add(goroutines * each)
	var wrong sync.Once
	var senders sync.WaitGroup
	for g := range goroutines {
		senders.Go(func() {
			send := func() {
				for i := range each {
					want := fmt.Appendf(bytes.Clone(body), "%d/%d", g, i)
					err := c.RequestBytesAsync(ctx, codec.FlagBinary, want, func(r *codec.Message, err error) {
						defer replies.Done()
						if err != nil || !bytes.Equal(r.PayloadBytes(), want) {
							wrong.Do(func() { t.Errorf("request %d/%d: reply %v", g, i, err) })
						}
					})
					if err != nil {
						t.Error(err)
						replies.Done()
					}
				}
			}
			if g%2 == 0 {
				if err := c.Batch(send); err != nil {
					t.Error(err)
				}
			} else {
				send()
			}
		})
	}
	senders.Wait()
	replies.Wait()
}

// A connection that ends inside a batch fails every staged request
// through its callback, once, and Batch reports the failed write.
func TestBatchEndedByACloseFailsItsStagedRequests(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	const n = 20
	var calls sync.WaitGroup
	calls.Add(n)
	var mu sync.Mutex
	failed := 0
	err := c.Batch(func() {
		for range n {
			err := c.RequestBytesAsync(context.Background(), codec.FlagBinary, []byte("never sent"), func(_ *codec.Message, err error) {
				mu.Lock()
				if errors.Is(err, codec.ErrConnClosed) {
					failed++
				}
				mu.Unlock()
				calls.Done()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	})
	if err == nil {
		t.Error("Batch on a connection closed inside it: no error")
	}
	calls.Wait()
	if failed != n {
		t.Fatalf("%d of %d staged requests failed with ErrConnClosed", failed, n)
	}
}

// A prefixed stream request staged inside Batch keeps its prefix: a
// reply with its number that does not start with the prefix is not its.
func TestBatchedStreamRequestKeepsItsPrefix(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		c.ReplyBytes(m, []byte("zz: a stray reply with its number"))
		c.ReplyBytes(m, append([]byte("ab: "), m.PayloadBytes()...))
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	got := make(chan string, 2)
	err := c.Batch(func() {
		err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("ab"), 2, func(r *codec.Message, err error) codec.StreamStep {
			if err != nil {
				got <- err.Error()
			} else {
				got <- string(r.PayloadBytes())
			}
			return codec.StreamDone
		})
		if err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := testwait.Recv(t, got, 30*time.Second, "the stream's reply"); r != "ab: ab" {
		t.Fatalf("the stream got %q, want the reply with its prefix", r)
	}
}
