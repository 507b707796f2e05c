package codec_test

import (
	"net"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// On the flat read path, small replies to the frames of a read are
// buffered; any other write the handler makes (a push, a large reply) must
// still leave after the replies it made before, and before those after.
func TestFlatPathKeepsWriteOrder(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		req := msg.(*codec.Message)
		c.Reply(req, req.Payload) // buffered: small and borrowed
		if req.Seq == 1 {
			push := packet.Get(4)
			copy(push.Bytes(), "push")
			c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 9, push)) // not buffered
			c.Reply(req, packet.Wrap(make([]byte, 3000)))                          // large: not buffered
		}
	}})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var frames []byte // three requests in one write: one read on the server
	for seq := uint8(1); seq <= 3; seq++ {
		frames = append(frames, encodeSRMP(t, codec.KindRequest, codec.FlagBinary, seq, []byte{'a' + seq})...)
	}
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	r := bufioReader(conn)
	want := []struct {
		kind codec.Kind
		seq  uint8
		n    int
	}{{codec.KindReply, 1, 1}, {codec.KindOneWay, 9, 4}, {codec.KindReply, 1, 3000}, {codec.KindReply, 2, 1}, {codec.KindReply, 3, 1}}
	for i, w := range want {
		m, err := readSRMP(r)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.Kind != w.kind || m.Seq != w.seq || m.Payload.Total() != w.n {
			t.Fatalf("message %d: kind %d seq %d, %d bytes; want kind %d seq %d, %d bytes", i, m.Kind, m.Seq, m.Payload.Total(), w.kind, w.seq, w.n)
		}
		m.Release()
	}
}
