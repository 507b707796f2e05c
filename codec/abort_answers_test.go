package codec_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// srmpRequests encodes requests with sequence numbers 1..len(bodies).
func srmpRequests(t *testing.T, bodies ...string) []byte {
	t.Helper()
	var b []byte
	for i, s := range bodies {
		f, err := codec.EncodeSRMP(codec.KindRequest, codec.FlagString, uint8(i+1), payload([]byte(s)))
		if err != nil {
			t.Fatal(err)
		}
		b = f.AppendTo(b)
		f.Release()
	}
	return b
}

// tooLarge is an SRMP header declaring a frame past a 1 KiB MaxFrame.
var tooLarge = []byte{0x01, 0x09, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x40}

// readReplies reads SRMP replies from conn until it ends and returns their
// payloads in order.
func readReplies(t *testing.T, conn net.Conn) []string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	all, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the replies: %v", err)
	}
	var got []string
	for len(all) > 0 {
		n, err := codec.SRMPSplitter{}.FrameLen(all, 1<<20)
		if err != nil || n <= 0 || n > len(all) {
			t.Fatalf("replies end in %d bytes that are not a frame (%v)", len(all), err)
		}
		m, err := codec.DecodeSRMP(payload(all[:n]))
		if err != nil || m.Kind != codec.KindReply || int(m.Seq) != len(got)+1 {
			t.Fatalf("reply %d: %+v, %v", len(got)+1, m, err)
		}
		got = append(got, string(m.PayloadBytes()))
		m.Release()
		all = all[n:]
	}
	return got
}

// A peer that sends valid requests and then a frame that breaks the
// protocol gets the answers to the valid ones before its connection ends
// (ReasonProtocol, with the frame's error): whether the bad frame comes in
// the same read (the flat path) or after a frame split across reads (the
// pipeline path), and whether the handler is still answering the earlier
// ones.
func TestProtocolErrorAnswersEarlierRequests(t *testing.T) {
	leakcheck.Check(t)
	bodies := []string{"one", "two", "three"}
	valid := srmpRequests(t, bodies...)
	third := len(srmpRequests(t, bodies[:2]...))
	cases := []struct {
		name   string
		writes [][]byte
	}{
		{"one write", [][]byte{append(append([]byte(nil), valid...), tooLarge...)}},
		{"split frame", [][]byte{valid[:third+3], append(append([]byte(nil), valid[third+3:]...), tooLarge...)}},
		{"byte at a time", splitBytes(append(append([]byte(nil), valid...), tooLarge...))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			closed := make(chan error, 1)
			_, addr := serve(t, "tcp", codec.Options{
				Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: 1024})),
				Handler:  echoSRMP,
				OnClose:  func(_ *codec.Conn, err error) { closed <- err },
			})
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, w := range tc.writes {
				if _, err := conn.Write(w); err != nil {
					break // the server may end the connection before the last bytes
				}
			}
			got := readReplies(t, conn)
			if len(got) != len(bodies) {
				t.Fatalf("replies %q; want %q", got, bodies)
			}
			for i := range bodies {
				if got[i] != bodies[i] {
					t.Fatalf("replies %q; want %q", got, bodies)
				}
			}
			var e *transport.CloseError
			if err := testwait.Recv(t, closed, 10*time.Second, "the connection's end"); !errors.As(err, &e) || e.Reason != transport.ReasonProtocol || !errors.Is(e, codec.ErrFrameTooLarge) {
				t.Fatalf("closed with %v; want ReasonProtocol and ErrFrameTooLarge", err)
			}
		})
	}
}

// Over UDP, a datagram whose whole frames are followed by a cut one gets
// its whole frames answered; the cut frame then ends the peer's session
// (ReasonProtocol, ErrTruncated).
func TestUDPCutFrameAnswersWholeFrames(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan error, 1)
	srv, addr := serve(t, "udp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP,
		OnClose: func(_ *codec.Conn, err error) { closed <- err }})
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	whole := srmpRequests(t, "one", "two")
	cut := srmpRequests(t, "three")[:5]
	conn.Write(append(whole, cut...))
	readDatagramReplies(t, conn, "one", "two")
	var e *transport.CloseError
	if err := testwait.Recv(t, closed, 10*time.Second, "the connection's end"); !errors.As(err, &e) || e.Reason != transport.ReasonProtocol || !errors.Is(e, codec.ErrTruncated) {
		t.Fatalf("peer session closed with %v; want ReasonProtocol and ErrTruncated", err)
	}
	if n := srv.Transport().Stats().Closed[transport.ReasonProtocol]; n != 1 {
		t.Fatalf("sessions closed with ReasonProtocol: %d; want 1", n)
	}
}

// readDatagramReplies reads one SRMP reply per datagram, the i-th with
// sequence number i+1 and payload want[i].
func readDatagramReplies(t *testing.T, conn net.Conn, want ...string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, w := range want {
		buf := make([]byte, 100)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		m, err := codec.DecodeSRMP(payload(buf[:n]))
		if err != nil || string(m.PayloadBytes()) != w || int(m.Seq) != i+1 {
			t.Fatalf("reply %d: %q, %v; want %q", i+1, buf[:n], err, w)
		}
		m.Release()
	}
}

// splitBytes returns b as one-byte writes.
func splitBytes(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}
