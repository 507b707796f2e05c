package codec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// recorder notes the order handlers run in; it passes strings on, emitting
// each inbound string `copies` times.
type recorder struct {
	name   string
	log    *[]string
	copies int
}

func (r *recorder) Read(c *codec.HandlerContext, msg any) error {
	*r.log = append(*r.log, "read "+r.name)
	for range r.copies {
		if err := c.FireRead(msg.(string) + r.name); err != nil {
			return err
		}
	}
	return nil
}

func (r *recorder) Write(c *codec.HandlerContext, msg any) error {
	*r.log = append(*r.log, "write "+r.name)
	return c.FireWrite(msg)
}

func (r *recorder) Closed(*codec.HandlerContext, error) { *r.log = append(*r.log, "close "+r.name) }

func (r *recorder) Opened(*codec.HandlerContext) error {
	*r.log = append(*r.log, "open "+r.name)
	return nil
}

// sendFunc is a codec.Sender: Send hands the packet to the function
// (SendBytes, for byte-taking senders, copies the parts into a packet and
// does the same).
type sendFunc func(*packet.Packet) error

func (f sendFunc) Send(p *packet.Packet) error { return f(p) }

func (f sendFunc) SendBytes(parts ...[]byte) error {
	p := packet.Get(0)
	for _, b := range parts {
		p.Write(b)
	}
	return f(p)
}

// discard is a codec.Sender that drops what it is given.
var discard = sendFunc(func(p *packet.Packet) error { p.Release(); return nil })

func TestPipelineOrderAndFanOut(t *testing.T) {
	leakcheck.Check(t)
	var log, got []string
	mk := func(name string, copies int) func() codec.Handler {
		return func() codec.Handler { return &recorder{name: name, log: &log, copies: copies} }
	}
	p := codec.NewPipeline(mk("a", 1), mk("b", 2), mk("c", 0+1))
	var sent int
	ch := p.NewChain(sendFunc(func(pk *packet.Packet) error { sent++; pk.Release(); return nil }),
		func(msg any) error { got = append(got, msg.(string)); return nil })

	if err := ch.Open(); err != nil || strings.Join(log, ",") != "open a,open b,open c" {
		t.Fatalf("open: %v, log %v", err, log)
	}
	log = nil
	if err := ch.Read("x"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(log, ",") != "read a,read b,read c,read c" || strings.Join(got, ",") != "xabc,xabc" {
		t.Fatalf("read: log %v, sink %v", log, got)
	}
	log = nil
	if err := ch.Write(packet.Get(1)); err != nil || sent != 1 {
		t.Fatalf("write: %v, sent %d", err, sent)
	}
	if strings.Join(log, ",") != "write c,write b,write a" {
		t.Fatalf("write order %v", log)
	}
	if err := ch.Write("not encoded"); !errors.Is(err, codec.ErrUnencoded) {
		t.Fatalf("unencoded write: %v", err)
	}
	log = nil
	ch.Close(nil)
	if strings.Join(log, ",") != "close c,close b,close a" {
		t.Fatalf("close order %v", log)
	}
}

// Each connection's chain has its own handler instances, so per-connection
// state never leaks between connections (in NewLife, handler instances are
// shared by every session of a server, and their state is too).
func TestPipelineStatePerConnection(t *testing.T) {
	leakcheck.Check(t)
	p := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
	var a, b []*codec.Message
	keep := func(m any) *codec.Message { return m.(*codec.Message).Keep() } // messages are lent
	chA := p.NewChain(discard, func(m any) error { a = append(a, keep(m)); return nil })
	chB := p.NewChain(discard, func(m any) error { b = append(b, keep(m)); return nil })
	half := packet.Wrap([]byte{1, 1, 4, 0, 'O', 'p'})
	chA.Read(half) // connection A has half a frame buffered
	rest := packet.Wrap([]byte{'e', 'n'})
	chB.Read(rest) // must not complete A's frame
	chA.Read(rest)
	half.Release()
	rest.Release()
	if len(a) != 1 || len(b) != 0 || string(a[0].Payload.AppendTo(nil)) != "Open" {
		t.Fatalf("A got %d, B got %d", len(a), len(b))
	}
	a[0].Release()
	chA.Close(nil)
	chB.Close(nil)
}
