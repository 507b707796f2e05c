package codec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Issue 13, battery item 2: fuzz targets for the decoders fuzz_test.go
// leaves out — the length-field and delimiter pipeline stages, the
// framers' limits, DecodeSRMP on bytes no framer cut, and a real server's
// read path (the flat path of one-stage pipelines, which a chain built
// without a session never takes). Seeds are in testdata/fuzz/<target>.

// pipelineFrames reads the chunks that cuts describe through a chain of
// one stage, one reused receive buffer for all reads as a connection does,
// and returns kept copies of what the stage lent, as bytes.
func pipelineFrames(t *testing.T, stage func() codec.Handler, data, cuts []byte) [][]byte {
	var got [][]byte
	chain := codec.NewPipeline(stage).NewChain(discard, func(msg any) error {
		p := msg.(*packet.Packet)
		k := p.Keep() // lent: kept past the call, then compared after the buffer was reused
		got = append(got, k.AppendTo(nil))
		k.Release()
		return nil
	})
	rx := packet.Get(len(data))
	for _, c := range cutAt(data, cuts) {
		rx.Resize(len(c))
		copy(rx.Bytes(), c)
		err := chain.Read(rx)
		rx.Resize(rx.Cap())
		clear(rx.Bytes())
		if err != nil {
			break
		}
	}
	rx.Release()
	chain.Close(nil)
	return got
}

// FuzzPipelineLengthField: the length-field stage lends, in order, the
// payloads of the frames a framer cuts from whole delivery, for every field
// size and offset.
func FuzzPipelineLengthField(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		sizes := []int{1, 2, 4, -2, -4, codec.VarintLength, 0}
		lf := codec.LengthField{Offset: len(data) % 3, Size: sizes[len(cuts)%len(sizes)]}
		frames := frameBoth(t, lf, data, cuts)
		got := pipelineFrames(t, codec.LengthFieldFraming(lf, codec.FramerConfig{MaxFrame: 1 << 16}), data, cuts)
		if len(got) != len(frames) {
			t.Fatalf("stage gave %d payloads, framer %d frames", len(got), len(frames))
		}
		for i, fr := range frames {
			if !bytes.Equal(got[i], fr[lf.HeaderLen(fr):]) {
				t.Fatalf("payload %d differs from its frame's", i)
			}
		}
		leakFree(t, start)
	})
}

// FuzzPipelineLines: the delimiter stage lends the lines a framer cuts,
// delimiter included, for the default and a three-byte delimiter.
func FuzzPipelineLines(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		d := codec.Delimiter{}
		if len(cuts)%2 == 1 {
			d.Delim = []byte("<|>")
		}
		cfg := codec.FramerConfig{MaxFrame: 1 << 8} // small: lines at the limit stay short
		var frames [][]byte
		{ // whole delivery through a framer with the stage's limit
			fr := codec.NewFramer(d, cfg)
			p := packet.Wrap(data)
			fr.Feed(p, func(l *packet.Packet) error { frames = append(frames, l.AppendTo(nil)); return nil })
			p.Release()
			fr.Reset()
		}
		got := pipelineFrames(t, codec.DelimiterFraming(d, cfg), data, cuts)
		if len(got) != len(frames) {
			t.Fatalf("stage gave %d lines, framer %d", len(got), len(frames))
		}
		for i := range frames {
			if !bytes.Equal(got[i], frames[i]) {
				t.Fatalf("line %d differs: %q, framer %q", i, got[i], frames[i])
			}
		}
		leakFree(t, start)
	})
}

// FuzzFramerLimits: under a small frame limit chosen by the input, any
// split of any bytes, for each splitter, fails only with a framing error
// of this package, never holds more pooled memory than the size class of
// the limit, holds bytes exactly when Close reports ErrTruncated, and
// releases everything.
func FuzzFramerLimits(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		if len(data) == 0 {
			return
		}
		start := leakcheck.Mark()
		splits := []codec.Splitter{
			codec.SRMPSplitter{}, codec.LengthField{Size: 1}, codec.LengthField{Offset: 1, Size: -4},
			codec.LengthField{Size: codec.VarintLength}, codec.Delimiter{}, codec.Delimiter{Delim: []byte("<|>")},
		}
		split := splits[int(data[0])%len(splits)]
		maxFrame := 8 + int(data[0])%200 // at most 207: a few bytes of input can pass it
		limit := poolClass(maxFrame)
		fr := codec.NewFramer(split, codec.FramerConfig{MaxFrame: maxFrame})
		var err error
		for _, c := range cutAt(data[1:], cuts) {
			p := packet.Wrap(c)
			err = fr.Feed(p, func(fr *packet.Packet) error {
				if fr.Total() > maxFrame || fr.Total() == 0 {
					t.Fatalf("frame of %d bytes, limit %d", fr.Total(), maxFrame)
				}
				return nil
			})
			p.Release()
			if held := pooledBytes(start); held > limit {
				t.Fatalf("%d pooled bytes held, limit %d (frames of at most %d)", held, limit, maxFrame)
			}
			if err != nil {
				break
			}
		}
		if err != nil && !errors.Is(err, codec.ErrFrameTooLarge) && !errors.Is(err, codec.ErrCorruptFrame) {
			t.Fatalf("framing error %v is not one of the package's", err)
		}
		held := fr.Buffered()
		if cerr := fr.Close(); (held > 0) != errors.Is(cerr, codec.ErrTruncated) || (held == 0 && cerr != nil) {
			t.Fatalf("%d bytes held, Close %v", held, cerr)
		}
		leakFree(t, start)
	})
}

// FuzzDecodeSRMP: DecodeSRMP on any bytes, not only what a framer cut,
// fails with a framing error unless they are exactly one frame (by the
// splitter), and then gives the frame's fields and payload. (Bytes that
// declare more than they hold fail with ErrFrameTooLarge, the rest with
// ErrCorruptFrame.)
func FuzzDecodeSRMP(f *testing.F) {
	for _, s := range [][]byte{{0x01, 0x01, 0x04, 0x00, 'O', 'p', 'e', 'n'}, {0x41, 0x05, 0, 0}, {0xC1, 0x7F, 0xFF, 0xFF, 1, 0, 0, 0, 'e'}, {0x01}, {0x01, 1, 2, 0, 'x'}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := leakcheck.Mark()
		n, ferr := codec.SRMPSplitter{}.FrameLen(data, max(len(data), 8))
		whole := ferr == nil && n == len(data)
		m, err := codec.DecodeSRMP(packet.Wrap(data))
		switch {
		case whole && err != nil:
			t.Fatalf("a whole frame failed to decode: %v", err)
		case !whole && !errors.Is(err, codec.ErrCorruptFrame) && !errors.Is(err, codec.ErrFrameTooLarge):
			t.Fatalf("%d bytes, not one frame (%d, %v), decoded with %v", len(data), n, ferr, err)
		case whole:
			h := 4
			if binary.LittleEndian.Uint16(data[2:]) == 0xFFFF {
				h = 8
			}
			if m.Kind != codec.Kind(data[0]>>6) || m.Flag != data[0]&0x3F || m.Seq != data[1] || !bytes.Equal(m.PayloadBytes(), data[h:]) {
				t.Fatalf("decoded %d/%d/%d %q from % X", m.Kind, m.Flag, m.Seq, m.PayloadBytes(), data)
			}
			m.Release()
		}
		leakFree(t, start)
	})
}

// fuzzServers are the servers FuzzServer sends to, started once per fuzzing
// process: an SRMP echo and a length-field echo, each a one-stage pipeline
// (the flat read path).
type fuzzServers struct {
	srmp, lf string
	closed   chan uint64 // the ended connection's count of unknown replies
}

func startFuzzServers(f *testing.F) *fuzzServers {
	fs := &fuzzServers{closed: make(chan uint64, 1)}
	cfg := codec.FramerConfig{MaxFrame: 1 << 16}
	onClose := func(c *codec.Conn, _ error) { fs.closed <- c.Stats().Unknown }
	for _, s := range []struct {
		addr  *string
		stage func() codec.Handler
		h     func(*codec.Conn, any)
	}{
		{&fs.srmp, codec.SRMPFraming(cfg), echoSRMP},
		{&fs.lf, codec.LengthFieldFraming(codec.LengthField{}, cfg), func(c *codec.Conn, msg any) { c.Write(msg) }},
	} {
		srv, err := codec.NewServer(transport.Config{}, codec.Options{Pipeline: codec.NewPipeline(s.stage), Handler: s.h, OnClose: onClose})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { srv.Close() })
		a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		*s.addr = a.String()
	}
	return fs
}

// The fence ends an input the server framed whole: its echo marks the end
// of the replies.
var fuzzFence = []byte("fence 3f9a")

// FuzzServer: a server's read path, fed the chunks that cuts describe in
// separate writes, answers exactly the requests a framer cuts from whole
// delivery — SRMP requests echoed with their kind, flag and sequence
// number, other kinds not answered and replies counted as unknown; every
// length-field frame echoed in order — and, on bytes that break the
// framing or stop inside a frame, answers a prefix of them and ends the
// connection. Nothing is left held (buffers released).
func FuzzServer(f *testing.F) {
	fuzzSeeds(f)
	fs := startFuzzServers(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		isSRMP := len(cuts)%2 == 0
		var split codec.Splitter = codec.SRMPSplitter{}
		addr := fs.srmp
		if !isSRMP {
			split, addr = codec.LengthField{}, fs.lf
		}
		frames, ok := frameAll(split, data)
		consumed := 0
		var want [][]byte // replies, as frames
		unknown := uint64(0)
		for _, fr := range frames {
			consumed += len(fr)
			switch {
			case !isSRMP:
				want = append(want, fr)
			case codec.Kind(fr[0]>>6) == codec.KindRequest:
				want = append(want, srmpReplyTo(fr))
			case codec.Kind(fr[0]>>6) >= codec.KindReply:
				unknown++
			}
		}
		complete := ok && consumed == len(data)
		in := data
		if complete {
			var fence []byte
			if isSRMP {
				fence = cat(srmpShort(srmpRequest, 0xEE, uint16(len(fuzzFence))), fuzzFence)
				want = append(want, srmpReplyTo(fence))
			} else {
				fence = cat(lfField(codec.LengthField{}, uint64(len(fuzzFence))), fuzzFence)
				want = append(want, fence)
			}
			in = cat(data, fence)
		}

		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		wrote := make(chan struct{})
		defer func() { conn.Close(); <-wrote }()
		go func() { // written while the replies are read: neither side can block the other
			defer close(wrote)
			for _, c := range cutAt(in, cuts) {
				if _, err := conn.Write(c); err != nil {
					return
				}
			}
			if !complete {
				conn.(*net.TCPConn).CloseWrite() // the server ends the connection on a bad or cut frame
			}
		}()
		r := bufio.NewReader(conn)
		var got [][]byte
		for len(got) < len(want) {
			fr, err := readFrame(r, isSRMP)
			if err != nil {
				if complete || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
					t.Fatalf("after %d of %d replies: %v", len(got), len(want), err)
				}
				break
			}
			got = append(got, fr)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("reply %d is % X, want % X", i, got[i], want[i])
			}
		}
		conn.Close()
		select {
		case n := <-fs.closed:
			if complete && isSRMP && n != unknown {
				t.Fatalf("server counted %d unknown replies, want %d", n, unknown)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not end the connection")
		}
		if r := leakcheck.Buffers(start, 2*time.Second); r != "" {
			t.Fatal(r)
		}
	})
}

// frameAll cuts data whole as the server's framer would (its limit, 64 KiB),
// and reports whether the framing held.
func frameAll(split codec.Splitter, data []byte) ([][]byte, bool) {
	fr := codec.NewFramer(split, codec.FramerConfig{MaxFrame: 1 << 16})
	defer fr.Reset()
	var out [][]byte
	p := packet.Wrap(data)
	defer p.Release()
	err := fr.Feed(p, func(f *packet.Packet) error { out = append(out, f.AppendTo(nil)); return nil })
	return out, err == nil
}

// srmpReplyTo is the echo server's reply to an SRMP request frame: the same
// flag, sequence number and payload, in the form the server writes (long
// only from 65 535 bytes).
func srmpReplyTo(req []byte) []byte {
	h := 4
	if binary.LittleEndian.Uint16(req[2:]) == 0xFFFF {
		h = 8
	}
	body := req[h:]
	b0 := byte(codec.KindReply)<<6 | req[0]&0x3F
	if len(body) >= 0xFFFF {
		return cat(srmpLong(b0, req[1], uint32(len(body))), body)
	}
	return cat(srmpShort(b0, req[1], uint16(len(body))), body)
}

// readFrame reads one reply frame (SRMP, or the length field of size 2),
// header included.
func readFrame(r *bufio.Reader, isSRMP bool) ([]byte, error) {
	if !isSRMP {
		h := make([]byte, 2)
		if _, err := io.ReadFull(r, h); err != nil {
			return nil, err
		}
		body := make([]byte, binary.LittleEndian.Uint16(h))
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		return slices.Concat(h, body), nil
	}
	m, err := readSRMP(r)
	if err != nil {
		return nil, err
	}
	defer m.Release()
	b0 := byte(m.Kind)<<6 | m.Flag
	body := m.PayloadBytes()
	if len(body) >= 0xFFFF {
		return cat(srmpLong(b0, m.Seq, uint32(len(body))), body), nil
	}
	return cat(srmpShort(b0, m.Seq, uint16(len(body))), body), nil
}
