package codec_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// answerTogether is a server handler that holds the first n requests of
// a connection and then answers them in one write, in the order of
// script: each entry is the payload of the request to answer ("3"), of
// one to answer with an error reply ("!3"), or a one-way message to
// write ("push").
func answerTogether(n int, script []string) func(*codec.Conn, any) {
	held := make(map[int]*codec.Message)
	return func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message).Keep()
		var body int
		fmt.Sscan(string(m.PayloadBytes()), &body)
		held[body] = m
		if len(held) < n {
			return
		}
		c.Batch(func() {
			for _, step := range script {
				var i int
				switch {
				case step == "push":
					c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 0, packet.Wrap([]byte("push"))))
					continue
				case strings.HasPrefix(step, "!"):
					fmt.Sscan(step[1:], &i)
					c.ReplyError(held[i], packet.Wrap([]byte("refused")))
					continue
				}
				fmt.Sscan(step, &i)
				c.Reply(held[i], held[i].TakePayload())
			}
		})
		for _, m := range held {
			m.Release()
		}
		clear(held)
	}
}

// Replies that arrive together reach their callbacks in the order of the
// stream, whatever the order of the requests, with a one-way message and
// an error reply among them in their places; blocking requests among the
// asynchronous ones get theirs.
func TestRepliesOfOneReadKeepTheStreamsOrder(t *testing.T) {
	leakcheck.Check(t)
	const n = 80 // more than are matched under one lock
	var script []string
	for i := n - 1; i >= 0; i-- { // the last request's reply first
		switch i {
		case 60:
			script = append(script, "push")
		case 40:
			script = append(script, "!40")
			continue
		}
		script = append(script, fmt.Sprint(i))
	}
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: answerTogether(n, script)})
	var mu sync.Mutex
	var got []string
	record := func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: func(_ *codec.Conn, msg any) {
		record(string(msg.(*codec.Message).PayloadBytes()))
	}})
	ctx := context.Background()
	var all sync.WaitGroup
	all.Add(n)
	c.Batch(func() {
		for i := range n {
			body := fmt.Sprint(i)
			if i%10 == 5 { // blocking ones, on goroutines of their own: delivered in order too, but not seen in it
				go func() {
					defer all.Done()
					r, err := c.RequestBytes(ctx, codec.FlagString, []byte(body))
					if err != nil || string(r.PayloadBytes()) != body {
						t.Errorf("blocking request %s: %v", body, err)
						return
					}
					r.Release()
				}()
				continue
			}
			err := c.RequestBytesAsync(ctx, codec.FlagString, []byte(body), func(r *codec.Message, err error) {
				defer all.Done()
				var re *codec.ReplyError
				switch {
				case errors.As(err, &re):
					record("!" + body)
				case err != nil:
					t.Errorf("request %s: %v", body, err)
				case string(r.PayloadBytes()) != body:
					t.Errorf("request %s: reply %q", body, r.PayloadBytes())
				default:
					record(body)
				}
			})
			if err != nil {
				t.Error(err)
			}
		}
	})
	all.Wait()
	var want []string
	for _, step := range script {
		var i int
		if _, err := fmt.Sscan(strings.TrimPrefix(step, "!"), &i); err == nil && i%10 == 5 {
			continue // a blocking request's: its goroutine sees it, at its own pace
		}
		want = append(want, step)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("callbacks and handler saw\n%v\nwant\n%v", got, want)
	}
}

// A callback that panics ends the connection; the callbacks of the
// replies matched with it each still get an outcome, once: their reply,
// or an error matching ErrConnClosed.
func TestAPanickingCallbackLosesNoOtherRequest(t *testing.T) {
	leakcheck.Check(t)
	const n = 20
	script := make([]string, n)
	for i := range script {
		script[i] = fmt.Sprint(i)
	}
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: answerTogether(n, script)})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	var calls [n]int
	var mu sync.Mutex
	var outcomes sync.WaitGroup
	outcomes.Add(n)
	c.Batch(func() {
		for i := range n {
			err := c.RequestBytesAsync(context.Background(), codec.FlagString, []byte(fmt.Sprint(i)), func(r *codec.Message, err error) {
				mu.Lock()
				calls[i]++
				mu.Unlock()
				outcomes.Done()
				if err != nil && !errors.Is(err, codec.ErrConnClosed) {
					t.Errorf("request %d: %v", i, err)
				}
				if i == 5 && err == nil {
					panic("callback 5 fails")
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	waited := make(chan struct{})
	go func() { outcomes.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second): // a lost callback would wait for ever
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("outcomes after 30 s: %v", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, k := range calls {
		if k != 1 {
			t.Errorf("request %d: %d outcomes", i, k)
		}
	}
}
