package rpc_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// A stream the consumer leaves early goes on at the server (SRMP cannot
// cancel it). Its items must not reach a later stream on the same
// sequence number, whether of another action (the reply names its action)
// or of the same one (the number stays out of use while they come).
func TestLeftStreamsItemsNeverReachALaterStream(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.HandleStream(s, "Feed/A", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for i := 1; yield(i, nil); i++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
				}
			}
		}))
		must(t, rpc.HandleStream(s, "Feed/B", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond): // A's items arrive meanwhile
					yield(-1000, nil)
				}
			}
		}))
		must(t, rpc.Handle(s, "Bench/Void", func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	// items takes a stream's first n items and leaves it.
	items := func(action string, n int) (got []int) {
		for v, err := range rpc.Stream[int](ctx, cl, action, nil) {
			must(t, err)
			if got = append(got, v); len(got) == n {
				break // leaving: Feed/A goes on at the server
			}
		}
		return got
	}
	items("Feed/A", 1)
	time.Sleep(20 * time.Millisecond) // Feed/A's later items reach the client
	for _, c := range []struct {
		action string
		want   []int
	}{{"Feed/B", []int{-1000}}, {"Feed/A", []int{1, 2, 3, 4, 5}}} {
		for range 255 { // the sequence numbers come round to the left stream's
			must(t, cl.Invoke(ctx, "Bench/Void", nil, nil))
		}
		if got := items(c.action, len(c.want)); !slices.Equal(got, c.want) {
			t.Fatalf("%s yielded %v, want %v: items of the left Feed/A stream came in", c.action, got, c.want)
		}
	}
	if st := cl.Stats(); st.Unknown == 0 {
		t.Errorf("%v: want the left stream's later items dropped and counted", st)
	}
}

// A stream reply that is not a reply body (stray bytes after the action
// name) ends the stream with ErrBody, not as if it were its clean end.
func TestMalformedStreamReplyEndsTheStreamWithAnError(t *testing.T) {
	addr := fakeServer(t, func(f frame) []byte {
		item := srmp(b0Reply, f.seq, body(t, "Feed/X", 7))
		bad := srmp(b0Reply, f.seq, append(body(t, "Feed/X", nil), 1, 2)) // the name, then 2 stray bytes
		return append(item, bad...)
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	var got []int
	var end error
	for v, err := range rpc.Stream[int](context.Background(), cl, "Feed/X", nil) {
		if err != nil {
			end = err
			break
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{7}) || !errors.Is(end, rpc.ErrBody) {
		t.Fatalf("items %v, end %v; want [7] then ErrBody", got, end)
	}
}

// A consumer that falls behind by more than MaxStreamBufferBytes ends its
// stream with ErrStreamOverflow: the client holds no more than that.
func TestStreamBufferIsBoundedInBytes(t *testing.T) {
	const item = 1 << 20
	var yielded atomic.Int32
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.HandleStream(s, "Feed/Big", func(ctx context.Context, _ struct{}) iter.Seq2[[]byte, error] {
			return func(yield func([]byte, error) bool) {
				b := make([]byte, item)
				for range 2 * rpc.MaxStreamBufferBytes / item {
					if !yield(b, nil) {
						return
					}
					yielded.Add(1)
				}
			}
		}))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Timeout: time.Minute})
	n := 0
	var end error
	for _, err := range rpc.Stream[[]byte](context.Background(), cl, "Feed/Big", nil) {
		if err != nil {
			end = err
			break
		}
		if n++; n == 1 { // fall behind until the server has sent it all: more than the buffer holds
			waitFor(t, "the server to send every item", func() bool {
				return int(yielded.Load()) == 2*rpc.MaxStreamBufferBytes/item
			})
		}
	}
	if !errors.Is(end, rpc.ErrStreamOverflow) || n > rpc.MaxStreamBufferBytes/item+1 {
		t.Fatalf("after %d items: %v, want ErrStreamOverflow after at most %d", n, end, rpc.MaxStreamBufferBytes/item+1)
	}
}
