package rpc_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

func countTo(_ context.Context, n int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := 1; i <= n; i++ {
			if !yield(i, nil) {
				return
			}
		}
		if n > 100 {
			yield(0, rpc.NewError(429, "too many"))
		}
	}
}

func TestStreamDeliversItemsThenEnds(t *testing.T) {
	srv, addr := benchServer(t, rpc.Config{})
	must(t, rpc.HandleStream(srv, "Bench/Count", countTo))
	ctx := context.Background()
	for _, scheme := range []string{"tcp", "ws"} {
		cl, err := rpc.Dial(ctx, scheme+"://"+addr, rpc.ClientConfig{})
		must(t, err)
		var got []int
		for v, err := range rpc.Stream[int](ctx, cl, "Bench/Count", 5) {
			must(t, err)
			got = append(got, v)
		}
		if len(got) != 5 || got[0] != 1 || got[4] != 5 {
			t.Errorf("%s: items %v, want 1…5", scheme, got)
		}
		// An error mid-stream ends it with the server's error.
		n, last := 0, error(nil)
		for _, err := range rpc.Stream[int](ctx, cl, "Bench/Count", 101) {
			if err != nil {
				last = err
				break
			}
			n++
		}
		var ae *rpc.APIError
		if n != 101 || !errors.As(last, &ae) || ae.Code != 429 {
			t.Errorf("%s: %d items then %v, want 101 then a 429", scheme, n, last)
		}
		// Breaking out early leaves the connection usable.
		for range rpc.Stream[int](ctx, cl, "Bench/Count", 50) {
			break
		}
		if v, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || v != 42 {
			t.Errorf("%s: call after an abandoned stream: %d, %v", scheme, v, err)
		}
		cl.Close()
	}
}

func TestStreamOverHTTPIsServerSentEvents(t *testing.T) {
	srv, addr := benchServer(t, rpc.Config{})
	must(t, rpc.HandleStream(srv, "Bench/Count", countTo))
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Write([]byte("GET /Bench/Count?n=2 HTTP/1.1\r\nHost: x\r\n\r\n"))
	must(t, err)
	all, err := io.ReadAll(conn) // the response ends with the connection
	must(t, err)
	resp := string(all)
	want := "data: {\"action\":\"Bench/Count\",\"code\":0,\"data\":1}\n\n" +
		"data: {\"action\":\"Bench/Count\",\"code\":0,\"data\":2}\n\ndata: \n\n"
	if !strings.Contains(resp, "Content-Type: text/event-stream") || !strings.HasSuffix(resp, want) {
		t.Errorf("response:\n%s\nwant events:\n%s", resp, want)
	}
}
