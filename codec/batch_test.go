package codec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Requests sent inside Batch leave together and every one gets its own
// reply, in both the []byte and the Message forms.
func TestBatchedRequestBytes(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	ctx := context.Background()

	const n = 200 // more than fit the window: RequestBytesAsync waits for slots inside the batch
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := make(map[string]bool)
	wg.Add(n)
	err := c.Batch(func() {
		for i := range n {
			body := fmt.Appendf(nil, "req-%d", i)
			err := c.RequestBytesAsync(ctx, codec.FlagBinary, body, func(r *codec.Message, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[string(r.PayloadBytes())] = true // borrowed: copied by the conversion
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range n {
		if !got[fmt.Sprintf("req-%d", i)] {
			t.Fatalf("no reply for req-%d", i)
		}
	}

	r, err := c.RequestBytes(ctx, codec.FlagString, []byte("sync"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !bytes.Equal(r.PayloadBytes(), []byte("sync")) || r.Kind != codec.KindReply || r.Flag != codec.FlagString {
		t.Fatalf("reply %v %d %q", r.Kind, r.Flag, r.PayloadBytes())
	}
}

// The []byte forms are SRMP only, and the async one needs a receive
// goroutine.
func TestRequestBytesErrors(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()})
	if _, err := c.RequestBytes(context.Background(), 0, []byte("x")); !errors.Is(err, codec.ErrWrongFormat) {
		t.Fatalf("RequestBytes on a length-field connection: %v", err)
	}
	_, saddr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	s := dialCodec(t, "tcp", saddr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	if err := s.RequestBytesAsync(context.Background(), 0, []byte("x"), func(*codec.Message, error) {}); !errors.Is(err, codec.ErrAsyncNeedsEvents) {
		t.Fatalf("RequestBytesAsync on a ReceiveSync client: %v", err)
	}
}
