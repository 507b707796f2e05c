package codec_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// Owned messages: Keep is the message itself, TakePayload moves the
// payload out, PayloadBytes flattens a chain.
func TestMessageOwned(t *testing.T) {
	leakcheck.Check(t)
	m := codec.NewMessage(codec.KindRequest, 0xFF, 7, payload([]byte("abc")))
	if m.Borrowed() || m.Keep() != m || m.Flag != 0x3F {
		t.Fatalf("owned message: borrowed %v, flag %#x", m.Borrowed(), m.Flag)
	}
	p := m.TakePayload()
	if m.Payload != nil || string(p.Bytes()) != "abc" || p.Borrowed() {
		t.Fatal("TakePayload of an owned message")
	}
	if m.PayloadBytes() != nil || m.TakePayload() != nil {
		t.Fatal("empty message has payload bytes")
	}
	m.Release()
	p.Chain(payload([]byte("def")))
	m = codec.NewMessage(codec.KindOneWay, 0, 0, p)
	if got := string(m.PayloadBytes()); got != "abcdef" {
		t.Fatalf("PayloadBytes of a chain: %q", got)
	}
	m.Release()
}

// captured is a codec.Sender that records the messages sent, in hex.
// (SendBytes is there for Senders that may be given bytes.)
type captured struct {
	out []string
}

func (c *captured) Send(p *packet.Packet) error {
	c.out = append(c.out, hex.EncodeToString(p.AppendTo(nil)))
	p.Release()
	return nil
}

func (c *captured) SendBytes(parts ...[]byte) error {
	c.out = append(c.out, hex.EncodeToString(bytes.Join(parts, nil)))
	return nil
}

// The SRMP stage lends each decoded message: Release on it does nothing,
// and writing it back (Write takes a borrowed message) copies or keeps it,
// so the receive buffer is free again when Read returns.
func TestSRMPStageLendsAndCopies(t *testing.T) {
	leakcheck.Check(t)
	var out captured
	var seen int
	var chain *codec.Chain
	chain = codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{})).NewChain(&out, func(msg any) error {
		m := msg.(*codec.Message)
		if !m.Borrowed() || !m.Payload.Borrowed() {
			t.Errorf("message %d: borrowed %v, payload borrowed %v", seen, m.Borrowed(), m.Payload.Borrowed())
		}
		m.Release() // does nothing
		m.Payload.Release()
		m.Kind = codec.KindReply
		if err := chain.Write(m); err != nil { // Write copies the borrowed message
			t.Error(err)
		}
		seen++
		return nil
	})
	big := bytes.Repeat([]byte{7}, 600)
	in := append(unhex(t, "01 01 04 00 4F 70 65 6E"), encodeSRMP(t, codec.KindRequest, 2, 9, big)...)
	rx := packet.Get(len(in))
	copy(rx.Bytes(), in)
	if err := chain.Read(rx); err != nil {
		t.Fatal(err)
	}
	if rx.RefCount() != 1 {
		t.Fatalf("the receive buffer is still referenced (%d refs)", rx.RefCount())
	}
	rx.Release()
	chain.Close(nil)
	want := []string{
		"810104004f70656e",
		hex.EncodeToString(encodeSRMP(t, codec.KindReply, 2, 9, big)),
	}
	if seen != 2 || len(out.out) != 2 || out.out[0] != want[0] || out.out[1] != want[1] {
		t.Fatalf("sent %v", out.out)
	}
}

// A small SRMP message (written with HandlerContext.WriteBytes) reaches the
// sender whole whether the SRMP stage is the head or has stages before it,
// which see it as a packet.
func TestContextWriteBytes(t *testing.T) {
	leakcheck.Check(t)
	var log []string
	rec := func() codec.Handler { return &recorder{name: "head", log: &log, copies: 1} }
	for _, c := range []struct {
		name string
		p    *codec.Pipeline
		want string
	}{
		{"head", codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{})), "81050200"},
		{"inner", codec.NewPipeline(rec, codec.SRMPFraming(codec.FramerConfig{})), "81050200"},
	} {
		var out captured
		log = nil
		ch := c.p.NewChain(&out, func(any) error { return nil })
		if err := ch.Write(codec.NewMessage(codec.KindReply, 1, 5, payload([]byte{2, 0}))); err != nil {
			t.Fatal(err)
		}
		if len(out.out) != 1 || out.out[0] != c.want+"0200" {
			t.Errorf("%s: sent %v, want %s", c.name, out.out, c.want+"0200")
		}
	}
	if len(log) != 1 || log[0] != "write head" {
		t.Errorf("the stage before SRMP saw %v", log)
	}
}

// ReplyBytes and ReplyError answer with the request's flag and sequence.
func TestReplyBytesAndReplyError(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		req := msg.(*codec.Message)
		switch string(req.PayloadBytes()) {
		case "bytes":
			c.ReplyBytes(req, []byte("copied"))
		case "big":
			c.ReplyBytes(req, bytes.Repeat([]byte{1}, 70000))
		case "fail":
			c.ReplyError(req, req.Payload)
		case "empty":
			c.Reply(req, nil)
		}
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	for _, tc := range []struct {
		body string
		kind codec.Kind
		want []byte
	}{
		{"bytes", codec.KindReply, []byte("copied")},
		{"big", codec.KindReply, bytes.Repeat([]byte{1}, 70000)},
		{"fail", codec.KindError, []byte("fail")},
		{"empty", codec.KindReply, nil},
	} {
		r, err := c.Request(context.Background(), codec.NewMessage(codec.KindRequest, codec.FlagJSON, 0, payload([]byte(tc.body))))
		var re *codec.ReplyError
		if tc.kind == codec.KindError {
			// An error reply is the request's error, not a reply.
			if !errors.As(err, &re) || re.Flag != codec.FlagJSON || !bytes.Equal(re.Payload, tc.want) || r != nil {
				t.Errorf("%s: %v, want a *codec.ReplyError with the payload", tc.body, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != tc.kind || r.Flag != codec.FlagJSON || !bytes.Equal(r.PayloadBytes(), tc.want) {
			t.Errorf("%s: kind %d flag %d, %d bytes", tc.body, r.Kind, r.Flag, len(r.PayloadBytes()))
		}
		r.Release()
	}
}
