package baseline_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/lifenet/lifenet/internal/baseline"
)

// lfFrame is a length-field frame with payload p.
func lfFrame(p string) []byte {
	return append(binary.LittleEndian.AppendUint16(nil, uint16(len(p))), p...)
}

// srmpFrame is an SRMP frame of kind, flag 1 and seq with payload p, with
// the 8-byte header if long.
func srmpFrame(kind, seq byte, p string, long bool) []byte {
	b := []byte{kind<<6 | 1, seq}
	if long {
		b = binary.LittleEndian.AppendUint16(b, 0xFFFF)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
	} else {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
	}
	return append(b, p...)
}

// replyOf is the SRMP echo of a request frame: the kind bits set to reply.
func replyOf(req []byte) []byte {
	out := append([]byte(nil), req...)
	out[0] = baseline.KindReply<<6 | out[0]&0x3F
	return out
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// script is a connection that returns its chunks, one per Read (a chunk
// longer than the buffer over several), then io.EOF; it records each
// Write.
type script struct {
	chunks [][]byte
	reads  int
	out    bytes.Buffer
	writes int
}

func (s *script) Read(p []byte) (int, error) {
	for len(s.chunks) > 0 && len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	s.reads++
	n := copy(p, s.chunks[0])
	s.chunks[0] = s.chunks[0][n:]
	return n, nil
}

func (s *script) Write(p []byte) (int, error) {
	s.writes++
	return s.out.Write(p)
}

// serveScript runs ServeConn over chunks with the format's echo.
func serveScript(t *testing.T, f baseline.Format, chunks ...[]byte) (*script, *baseline.Counts, error) {
	t.Helper()
	s := &script{chunks: chunks}
	var n baseline.Counts
	err := baseline.ServeConn(s, f, baseline.Echo(f), &n)
	if s.writes > s.reads {
		t.Errorf("%d writes for %d reads: want at most one flush per read", s.writes, s.reads)
	}
	return s, &n, err
}

// Every format echoes a stream of frames however the reads cut it: at
// every byte position, and a byte at a time.
func TestEchoSplitEverywhere(t *testing.T) {
	req1, req2 := srmpFrame(baseline.KindRequest, 1, "Open", false), srmpFrame(baseline.KindRequest, 2, "hello, world", false)
	long := srmpFrame(baseline.KindRequest, 3, "long header, short payload", true)
	cases := []struct {
		f        baseline.Format
		in, want []byte
		frames   uint64
	}{
		{baseline.LengthField, cat(lfFrame("hello"), lfFrame(""), lfFrame("frame three")), cat(lfFrame("hello"), lfFrame(""), lfFrame("frame three")), 3},
		{baseline.SRMP, cat(req1, req2, long), cat(replyOf(req1), replyOf(req2), replyOf(long)), 3},
	}
	for _, c := range cases {
		for cut := 0; cut <= len(c.in); cut++ {
			s, n, err := serveScript(t, c.f, c.in[:cut], c.in[cut:])
			if err != io.EOF || !bytes.Equal(s.out.Bytes(), c.want) || n.Frames.Load() != c.frames || n.Bytes.Load() != uint64(len(c.in)) {
				t.Fatalf("%v cut at %d: err %v, out % x, frames %d, bytes %d", c.f, cut, err, s.out.Bytes(), n.Frames.Load(), n.Bytes.Load())
			}
		}
		var bytewise [][]byte
		for i := range c.in {
			bytewise = append(bytewise, c.in[i:i+1])
		}
		s, n, err := serveScript(t, c.f, bytewise...)
		if err != io.EOF || !bytes.Equal(s.out.Bytes(), c.want) || n.Frames.Load() != c.frames {
			t.Fatalf("%v a byte at a time: err %v, out % x", c.f, err, s.out.Bytes())
		}
	}
}

// The golden vectors of docs/PROTOCOL.md: S1 is answered by S1 as a reply,
// and the long header S7's layout is read.
func TestSRMPHeaders(t *testing.T) {
	s1 := []byte{0x01, 0x01, 0x04, 0x00, 'O', 'p', 'e', 'n'}
	s, _, err := serveScript(t, baseline.SRMP, s1)
	if want := []byte{0x81, 0x01, 0x04, 0x00, 'O', 'p', 'e', 'n'}; err != io.EOF || !bytes.Equal(s.out.Bytes(), want) {
		t.Fatalf("S1: % x, %v", s.out.Bytes(), err)
	}
	for _, c := range []struct {
		hdr  []byte
		want int
	}{
		{[]byte{}, 0},                 // no header yet
		{[]byte{0x01, 0x01, 0x10}, 0}, // the short header is not complete
		{[]byte{0x01, 0x01, 0x10, 0x00}, 4 + 16},
		{[]byte{0x01, 0x02, 0xFE, 0xFF}, 4 + 65534},
		{[]byte{0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00}, 8 + 65535},
		{[]byte{0x01, 0x02, 0xFF, 0xFF, 0x70, 0x11, 0x01, 0x00}, 8 + 70000},
		{[]byte{0x01, 0x02, 0xFF, 0xFF, 0x70}, 0}, // the long header is not complete
	} {
		if n, err := baseline.FrameLen(baseline.SRMP, c.hdr); n != c.want || err != nil {
			t.Errorf("FrameLen(% x) = %d, %v; want %d", c.hdr, n, err, c.want)
		}
	}
	if _, err := baseline.FrameLen(baseline.SRMP, []byte{1, 2, 0xFF, 0xFF, 0, 0, 0, 0x80}); err != baseline.ErrBadLength {
		t.Errorf("negative length: %v", err)
	}
	// The largest frame that fits the buffer, with the long header.
	big := srmpFrame(baseline.KindRequest, 9, string(make([]byte, baseline.BufferSize-8)), true)
	s, n, err := serveScript(t, baseline.SRMP, big[:100], big[100:])
	if err != io.EOF || !bytes.Equal(s.out.Bytes(), replyOf(big)) || n.Frames.Load() != 1 {
		t.Fatalf("buffer-sized frame: err %v, %d bytes out", err, s.out.Len())
	}
}

// One-way frames (and replies, errors) are counted, never answered.
func TestSRMPOneWayNotAnswered(t *testing.T) {
	req := srmpFrame(baseline.KindRequest, 7, "ask", false)
	in := cat(srmpFrame(baseline.KindOneWay, 5, "", false), req, srmpFrame(baseline.KindOneWay, 6, "push", false),
		srmpFrame(baseline.KindReply, 1, "late", false), srmpFrame(baseline.KindError, 2, "err", false))
	s, n, err := serveScript(t, baseline.SRMP, in)
	if err != io.EOF || !bytes.Equal(s.out.Bytes(), replyOf(req)) || n.Frames.Load() != 5 {
		t.Fatalf("err %v, out % x, frames %d", err, s.out.Bytes(), n.Frames.Load())
	}
}

// A long stream in reads that fill the whole buffer: frames straddle the
// buffer's end and are carried over.
func TestCarryAcrossFullBuffers(t *testing.T) {
	var in []byte
	for i := range 300 {
		in = append(in, lfFrame(string(bytes.Repeat([]byte{byte(i)}, 997)))...)
	}
	s, n, err := serveScript(t, baseline.LengthField, in)
	if err != io.EOF || !bytes.Equal(s.out.Bytes(), in) || n.Frames.Load() != 300 || s.reads < 5 {
		t.Fatalf("err %v, %d of %d bytes echoed, frames %d, reads %d", err, s.out.Len(), len(in), n.Frames.Load(), s.reads)
	}
}

// A stream that ends inside a frame, or carries a frame too large for the
// buffer or a negative length, ends with an error after echoing what came
// before.
func TestBadStreams(t *testing.T) {
	ok, okReq := lfFrame("ok"), srmpFrame(baseline.KindRequest, 1, "ok", false)
	for _, c := range []struct {
		f    baseline.Format
		in   []byte
		want error
	}{
		{baseline.LengthField, cat(ok, []byte{5, 0, 'a'}), io.ErrUnexpectedEOF},
		{baseline.LengthField, cat(ok, []byte{5}), io.ErrUnexpectedEOF},
		{baseline.LengthField, cat(ok, []byte{0xFF, 0xFF}), baseline.ErrFrameTooLarge},
		{baseline.SRMP, cat(okReq, []byte{1, 2, 0xFF, 0xFF, 0xF9, 0xFF, 0, 0}), baseline.ErrFrameTooLarge},
		{baseline.SRMP, cat(okReq, []byte{1, 2, 0xFF, 0xFF, 0, 0, 0, 0xFF}), baseline.ErrBadLength},
	} {
		s, n, err := serveScript(t, c.f, c.in)
		want := ok
		if c.f == baseline.SRMP {
			want = replyOf(okReq)
		}
		if err != c.want || n.Frames.Load() != 1 || !bytes.Equal(s.out.Bytes(), want) {
			t.Errorf("%v % x: err %v (want %v), frames %d, out % x", c.f, c.in, err, c.want, n.Frames.Load(), s.out.Bytes())
		}
	}
	if err := baseline.ServeConn(&script{}, 0, nil, nil); err != baseline.ErrFormat {
		t.Errorf("format 0: %v", err)
	}
}

// reference parses a whole stream the simple way and returns the echo,
// the number of frames, and how the stream ends.
func reference(f baseline.Format, in []byte) (out []byte, frames uint64, end error) {
	for len(in) > 0 {
		var hdr, n int
		switch {
		case f == baseline.LengthField && len(in) >= 2:
			hdr, n = 2, int(in[0])|int(in[1])<<8
		case f == baseline.SRMP && len(in) >= 4 && (in[2] != 0xFF || in[3] != 0xFF):
			hdr, n = 4, int(in[2])|int(in[3])<<8
		case f == baseline.SRMP && len(in) >= 8:
			v := int64(int32(uint32(in[4]) | uint32(in[5])<<8 | uint32(in[6])<<16 | uint32(in[7])<<24))
			if v < 0 {
				return out, frames, baseline.ErrBadLength
			}
			hdr, n = 8, int(v)
		default:
			return out, frames, io.ErrUnexpectedEOF
		}
		switch {
		case hdr+n > baseline.BufferSize:
			return out, frames, baseline.ErrFrameTooLarge
		case len(in) < hdr+n:
			return out, frames, io.ErrUnexpectedEOF
		}
		frame := in[:hdr+n]
		switch {
		case f == baseline.LengthField:
			out = append(out, frame...)
		case frame[0]>>6 == baseline.KindRequest:
			out = append(out, baseline.KindReply<<6|frame[0]&0x3F)
			out = append(out, frame[1:]...)
		}
		frames++
		in = in[hdr+n:]
	}
	return out, frames, io.EOF
}

// FuzzSplit feeds a stream to the frame loop in reads cut where cuts says
// (each byte: the next read's length, 1…64): the loop never panics and
// agrees with the simple reference on the echo, the frame count and the
// ending.
func FuzzSplit(f *testing.F) {
	req := srmpFrame(baseline.KindRequest, 1, "Open", false)
	f.Add(false, cat(lfFrame("hello"), lfFrame(""), lfFrame("x")), []byte{0, 3, 1})
	f.Add(true, cat(req, srmpFrame(baseline.KindOneWay, 5, "", false), srmpFrame(0, 2, "long", true)), []byte{1, 1, 1, 1, 1})
	f.Add(true, cat(req, []byte{0x81, 0x02, 0x02, 0x00, 'O', 'K'}), []byte{2})
	f.Add(true, cat(req, []byte{1, 2, 0xFF, 0xFF, 0, 0, 0, 0x80}), []byte{7})
	f.Add(true, []byte{1, 2, 0xFF, 0xFF, 0x70, 0x11, 0x01, 0x00, 1, 2}, []byte{})
	f.Add(false, []byte{0xFF, 0xFF, 1}, []byte{0})
	f.Add(false, []byte{5, 0, 'a', 'b'}, []byte{0})
	f.Fuzz(func(t *testing.T, srmp bool, in, cuts []byte) {
		fm := baseline.LengthField
		if srmp {
			fm = baseline.SRMP
		}
		var chunks [][]byte
		for rest, i := in, 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, int(cuts[i]%64)+1)
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		s := &script{chunks: chunks}
		var n baseline.Counts
		err := baseline.ServeConn(s, fm, baseline.Echo(fm), &n)
		out, frames, end := reference(fm, in)
		if err != end || !bytes.Equal(s.out.Bytes(), out) || n.Frames.Load() != frames || n.Bytes.Load() > uint64(len(in)) {
			t.Fatalf("%v % x cut %v:\nloop      %v, %d frames, out % x\nreference %v, %d frames, out % x",
				fm, in, cuts, err, n.Frames.Load(), s.out.Bytes(), end, frames, out)
		}
		if s.writes > s.reads {
			t.Fatalf("%d writes for %d reads", s.writes, s.reads)
		}
	})
}
