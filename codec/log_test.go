package codec_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

const (
	msgOpened = "transport: session opened"
	msgClosed = "transport: session closed"
	msgPanic  = "transport: hook panicked"
)

// A panic of Options.Handler is an Error line on Options.Log (the
// transport's Config.Log unset) with the panic's value and the stack of
// the handler that panicked; the connection ends, and the line of its
// close is Debug.
func TestLogHandlerPanic(t *testing.T) {
	leakcheck.Check(t)
	rec, log := logtest.New(slog.LevelInfo)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Log: log, Handler: func(c *codec.Conn, msg any) {
		if string(msg.(*codec.Message).PayloadBytes()) == "boom" {
			panic("handler boom")
		}
		echoSRMP(c, msg)
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	r, err := c.Request(context.Background(), request("fine"))
	replyText(t, r, err)
	if r, err = c.Request(context.Background(), request("boom")); !errors.Is(err, codec.ErrConnClosed) {
		if err == nil {
			r.Release()
		}
		t.Fatalf("request that panicked: %v, want ErrConnClosed", err)
	}
	testwait.For(t, 10*time.Second, "the panic's line", func() bool { return len(rec.Find(slog.LevelError, msgPanic)) > 0 })
	lines := rec.Records()
	if len(lines) != 1 {
		t.Fatalf("%d lines at Info and above, want the panic's alone: %v", len(lines), lines)
	}
	l := lines[0]
	if l.Attrs[logattr.Panic].String() != "handler boom" || !strings.Contains(l.Attrs[logattr.Stack].String(), "TestLogHandlerPanic") ||
		!l.Has(logattr.Session, logattr.Remote, logattr.Network) {
		t.Errorf("panic line %v", l.Attrs)
	}
}

// Options.Log is the transport's logger: a connection's Debug lines carry
// the common attributes, and a protocol violation's close is a Warn line
// with the codec's error.
func TestLogReachesTheTransport(t *testing.T) {
	leakcheck.Check(t)
	rec, log := logtest.New(slog.LevelDebug)
	srv, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP, Log: log})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	r, err := c.Request(context.Background(), request("hello"))
	replyText(t, r, err)
	c.Close()
	testwait.For(t, 10*time.Second, "the close line", func() bool { return len(rec.Find(slog.LevelDebug, msgClosed)) == 1 })
	if open := rec.Find(slog.LevelDebug, msgOpened); len(open) != 1 || !open[0].Has(logattr.Session, logattr.Remote, logattr.Network) {
		t.Fatalf("open lines %v", open)
	}
	cl := rec.Find(slog.LevelDebug, msgClosed)[0]
	if cl.Attrs[logattr.Reason].String() != "peer closed" || cl.Attrs[logattr.BytesIn].Uint64() == 0 || cl.Attrs[logattr.BytesOut].Uint64() == 0 {
		t.Fatalf("close line %v", cl.Attrs)
	}

	// A frame larger than MaxFrame (64 MiB by default) announced in the
	// SRMP extended length: the server ends the connection.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte{0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	io.Copy(io.Discard, raw)
	testwait.For(t, 10*time.Second, "the violation's line", func() bool { return len(rec.Find(slog.LevelWarn, msgClosed)) == 1 })
	w := rec.Find(slog.LevelWarn, msgClosed)[0]
	if w.Attrs[logattr.Reason].String() != transport.ReasonProtocol.String() ||
		!strings.Contains(w.Attrs[logattr.Err].String(), codec.ErrFrameTooLarge.Error()) {
		t.Fatalf("violation line %v, want a protocol violation caused by ErrFrameTooLarge", w.Attrs)
	}
	srv.Close()
}

// PartialBytes shows what the connections hold in incomplete frames, and
// drops to zero when they end.
func TestServerPartialBytes(t *testing.T) {
	leakcheck.Check(t)
	srv, addr := serve(t, "tcp", codec.Options{
		Pipeline:        codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: 4}, codec.FramerConfig{})),
		Handler:         func(c *codec.Conn, msg any) { c.Write(msg) },
		MaxPartialBytes: 4 << 20,
	})
	if n := srv.PartialBytes(); n != 0 {
		t.Fatalf("PartialBytes %d before any connection", n)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	const sent = 300_000
	c.Write(append([]byte{0x00, 0x00, 0x10, 0x00}, make([]byte, sent-4)...)) // the start of a 1 MiB frame
	testwait.For(t, 10*time.Second, "the partial frame held", func() bool { return srv.PartialBytes() >= sent })
	if n := srv.PartialBytes(); n > 1<<20 {
		t.Fatalf("PartialBytes %d for a frame of 1 MiB", n)
	}
	c.Close()
	testwait.For(t, 10*time.Second, "the partial frame given back", func() bool { return srv.PartialBytes() == 0 })
}
