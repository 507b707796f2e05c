package soak

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// RPC actions of the soak server.
const (
	actEcho  = "Soak/Echo"
	actPanic = "Soak/Panic"
	actSlow  = "Soak/Slow"
)

// flagSlow marks an SRMP request the codec server answers only after
// SlowFor (the codec clients' timeout calls); other flags are echoed at once.
const flagSlow = 0x2A

// errInjected is what the panicking action panics with.
var errInjected = errors.New("soak: injected panic")

// servers are the two servers under test.
type servers struct {
	rpc       *rpc.Server
	codec     *codec.Server
	rpcAddr   string
	codecAddr string

	slow      sync.WaitGroup // codec replies held back by flagSlow, for close
	slowCodec atomic.Int64   // the same, for quiet
	slowRPC   atomic.Int64   // slow RPC actions running
	closeOne  sync.Once
}

func startServers(ctx context.Context, o *Options) (*servers, error) {
	s := &servers{}
	var err error
	// Panics are logged with their stack and each injected fault's close
	// with a Warn line; at hundreds per run that would drown the progress
	// lines, and Stats() counts them anyway: discarded unless asked for.
	log := o.ServerLog
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.rpc, err = rpc.NewServer(rpc.Config{Log: log})
	if err != nil {
		return nil, err
	}
	slow := o.SlowFor
	err = errors.Join(
		// A handler goroutine per call (no Inline): the soak should see
		// the goroutines the default path starts and ends.
		rpc.Handle(s.rpc, actEcho, func(_ context.Context, b []byte) ([]byte, error) { return b, nil }),
		rpc.Handle(s.rpc, actPanic, func(context.Context, struct{}) (int32, error) { panic(errInjected) }),
		rpc.Handle(s.rpc, actSlow, func(ctx context.Context, _ struct{}) (int32, error) {
			s.slowRPC.Add(1)
			defer s.slowRPC.Add(-1)
			t := time.NewTimer(slow)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done(): // the caller's connection ended
			}
			return 0, nil
		}),
	)
	if err != nil {
		return nil, err
	}
	a, err := s.rpc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.rpcAddr = a.String()

	s.codec, err = codec.NewServer(transport.Config{Log: log}, codec.Options{Pipeline: srmpPipeline(), Handler: s.echo(slow)})
	if err == nil {
		a, err = s.codec.Listen(ctx, "tcp", "127.0.0.1:0")
	}
	if err != nil {
		s.rpc.Close()
		return nil, err
	}
	s.codecAddr = a.String()
	return s, nil
}

func srmpPipeline() *codec.Pipeline {
	return codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
}

// echo is the codec server's handler: each request is answered with its
// payload, or, flagged slow, with nothing after slow.
func (s *servers) echo(slow time.Duration) func(*codec.Conn, any) {
	return func(c *codec.Conn, msg any) {
		m, ok := msg.(*codec.Message)
		if !ok || m.Kind != codec.KindRequest {
			return
		}
		if m.Flag != flagSlow {
			_ = c.Reply(m, m.Payload) // fails only once the connection is closing
			return
		}
		kept := m.Keep() // the message is borrowed: keep it for the late reply
		s.slow.Add(1)
		s.slowCodec.Add(1)
		time.AfterFunc(slow, func() {
			defer s.slow.Done()
			_ = c.Reply(kept, nil) // fails if the connection ended meanwhile
			kept.Release()
			s.slowCodec.Add(-1)
		})
	}
}

// quiet reports whether no slow reply or slow action is pending.
func (s *servers) quiet() bool { return s.slowRPC.Load() == 0 && s.slowCodec.Load() == 0 }

// sessions counts the open connections of both servers.
func (s *servers) sessions() int { return s.rpc.Stats().Sessions + s.codec.Transport().SessionCount() }

func (s *servers) close() {
	s.closeOne.Do(func() {
		s.rpc.Close()
		s.codec.Close()
		s.slow.Wait() // no handler runs any more to add to it
	})
}
