package codec_test

import (
	"bytes"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// frameBoth frames data delivered whole and delivered in the chunks that
// cuts describe, and checks both give the same frames (or both fail).
func frameBoth(t *testing.T, s codec.Splitter, data, cuts []byte) [][]byte {
	run := func(chunks [][]byte) ([][]byte, bool) {
		f := codec.NewFramer(s, codec.FramerConfig{MaxFrame: 1 << 16})
		defer f.Reset()
		var out [][]byte
		emit := func(fr *packet.Packet) error { // fr is lent: copy its bytes
			out = append(out, fr.AppendTo(nil))
			return nil
		}
		for _, c := range chunks {
			p := packet.Get(len(c))
			copy(p.Bytes(), c)
			err := f.Feed(p, emit)
			p.Release()
			if err != nil {
				return out, false
			}
		}
		return out, true
	}
	whole, okWhole := run([][]byte{data})
	split, okSplit := run(cutAt(data, cuts))
	if okWhole != okSplit || len(whole) != len(split) {
		t.Fatalf("whole: %d frames ok=%v; split: %d frames ok=%v", len(whole), okWhole, len(split), okSplit)
	}
	for i := range whole {
		if !bytes.Equal(whole[i], split[i]) {
			t.Fatalf("frame %d differs between whole and split delivery", i)
		}
	}
	return whole
}

// cutAt splits data into chunks of cuts[i]+1 bytes, the rest in one.
func cutAt(data, cuts []byte) [][]byte {
	var chunks [][]byte
	rest := data
	for i := 0; len(rest) > 0; i++ {
		n := len(rest)
		if i < len(cuts) {
			n = min(int(cuts[i])+1, len(rest))
		}
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	return chunks
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte{1, 1, 4, 0, 'O', 'p', 'e', 'n', 0x81, 2, 2, 0, 'O', 'K'}, []byte{2, 0, 5})
	f.Add([]byte{1, 2, 0xFF, 0xFF, 5, 0, 0, 0, 1, 2, 3, 4, 5}, []byte{0, 0, 0, 0, 0})
	f.Add([]byte("line one\r\nline two\r\n"), []byte{3, 9})
	f.Add([]byte{0xAC, 0x02, 1, 2}, []byte{0})
}

func leakFree(t *testing.T, start uint64) {
	if r := leakcheck.Buffers(start, 0); r != "" {
		t.Fatal(r)
	}
}

// FuzzSRMP: split delivery gives the frames of whole delivery, and every
// frame decodes and re-encodes to the same bytes.
func FuzzSRMP(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		for _, fr := range frameBoth(t, codec.SRMPSplitter{}, data, cuts) {
			m, err := codec.DecodeSRMP(payload(fr))
			if err != nil {
				t.Fatalf("framed bytes do not decode: %v", err)
			}
			again, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			b := again.AppendTo(nil)
			again.Release()
			// The long form is used iff the payload is >= 65535 bytes, so
			// a short payload sent in the long form re-encodes shorter.
			if !bytes.Equal(b, fr) && !(fr[2] == 0xFF && fr[3] == 0xFF && len(fr)-8 < 65535) {
				t.Fatalf("round trip: % X -> % X", fr, b)
			}
		}
		leakFree(t, start)
	})
}

// FuzzLengthField: split property and round trip for every field size.
func FuzzLengthField(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		sizes := []int{1, 2, 4, -2, -4, codec.VarintLength, 0} // 0: the zero value, Size 2
		size := sizes[len(cuts)%len(sizes)]
		lf := codec.LengthField{Offset: len(data) % 3, Size: size}
		for _, fr := range frameBoth(t, lf, data, cuts) {
			h := lf.HeaderLen(fr)
			p := payload(fr[h:])
			again, err := lf.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			b := again.AppendTo(nil)
			again.Release()
			// Offset bytes are written as zeros and a varint may be padded
			// on the wire; compare what the format defines: the payload.
			if !bytes.Equal(b[lf.HeaderLen(b):], fr[h:]) {
				t.Fatalf("round trip payload differs")
			}
		}
		leakFree(t, start)
	})
}

// FuzzDelimiter: split property; every frame ends with the delimiter and
// holds no earlier one.
func FuzzDelimiter(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		for _, fr := range frameBoth(t, codec.Delimiter{}, data, cuts) {
			if !bytes.HasSuffix(fr, []byte("\r\n")) || bytes.Index(fr, []byte("\r\n")) != len(fr)-2 {
				t.Fatalf("bad line frame %q", fr)
			}
		}
		leakFree(t, start)
	})
}

// FuzzPipelineSRMP: the SRMP pipeline stage, fed the chunks through one
// reused receive buffer, lends messages whose kept copies (Message.Keep)
// equal the frames of whole delivery, decoded; bytes that fail framing
// fail the read after the same frames.
func FuzzPipelineSRMP(f *testing.F) {
	fuzzSeeds(f)
	f.Add([]byte{0x41, 0, 0, 0, 0x81, 7, 0xFF, 0xFF, 3, 0, 0, 0, 'a', 'b', 'c'}, []byte{0, 5, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		start := leakcheck.Mark()
		frames := frameBoth(t, codec.SRMPSplitter{}, data, cuts)
		var got []*codec.Message
		chain := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: 1 << 16})).NewChain(discard, func(msg any) error {
			m := msg.(*codec.Message)
			if !m.Borrowed() {
				t.Fatal("message not borrowed")
			}
			got = append(got, m.Keep())
			return nil
		})
		rx := packet.Get(len(data))
		for _, c := range cutAt(data, cuts) {
			rx.Resize(len(c))
			copy(rx.Bytes(), c)
			err := chain.Read(rx)
			rx.Resize(rx.Cap())
			clear(rx.Bytes()) // the next read reuses the buffer
			if err != nil {
				break
			}
		}
		rx.Release()
		chain.Close(nil)
		if len(got) != len(frames) {
			t.Fatalf("pipeline gave %d messages, framer %d frames", len(got), len(frames))
		}
		for i, fr := range frames {
			want, err := codec.DecodeSRMP(payload(fr))
			if err != nil {
				t.Fatal(err)
			}
			m := got[i]
			if m.Kind != want.Kind || m.Flag != want.Flag || m.Seq != want.Seq || !bytes.Equal(m.PayloadBytes(), want.PayloadBytes()) {
				t.Fatalf("message %d differs from its frame", i)
			}
			want.Release()
			m.Release()
		}
		leakFree(t, start)
	})
}
