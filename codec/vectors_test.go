package codec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func payload(b []byte) *packet.Packet {
	p := packet.GetWithHeadroom(8, len(b))
	copy(p.Bytes(), b)
	return p
}

func encodeSRMP(t testing.TB, kind codec.Kind, flag, seq uint8, body []byte) []byte {
	t.Helper()
	f, err := codec.EncodeSRMP(kind, flag, seq, payload(body))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	return f.AppendTo(nil)
}

// Golden vectors S1–S8 and S11 of docs/PROTOCOL.md §1: encoding gives exactly
// these bytes and decoding them gives the message back.
func TestSRMPGoldenVectors(t *testing.T) {
	leakcheck.Check(t)
	cases := []struct {
		name      string
		kind      codec.Kind
		flag, seq uint8
		body      []byte
		wire      string // whole frame, or header only when headerOnly
		header    bool
	}{
		{"S1 request Open", codec.KindRequest, 1, 1, []byte("Open"), "01 01 04 00 4F 70 65 6E", false},
		{"S2 reply OK", codec.KindReply, 1, 1, []byte("OK"), "81 01 02 00 4F 4B", false},
		{"S3 reply UTF-8", codec.KindReply, 1, 1, []byte("执行成功"), "81 01 0C 00 E6 89 A7 E8 A1 8C E6 88 90 E5 8A 9F", false},
		{"S4 one-way empty", codec.KindOneWay, 1, 5, nil, "41 05 00 00", false},
		{"S5 error reply", codec.KindError, 1, 0x7F, []byte("err"), "C1 7F 03 00 65 72 72", false},
		{"S6 largest short form", codec.KindRequest, 1, 2, make([]byte, 65534), "01 02 FE FF", true},
		{"S7 first long form", codec.KindRequest, 1, 2, make([]byte, 65535), "01 02 FF FF FF FF 00 00", true},
		{"S8 70000 bytes", codec.KindRequest, 1, 2, make([]byte, 70000), "01 02 FF FF 70 11 01 00", true},
		{"S11 string message", codec.KindRequest, codec.FlagString, 1, []byte("hi"), "00 01 02 00 68 69", false},
	}
	for _, c := range cases {
		got := encodeSRMP(t, c.kind, c.flag, c.seq, c.body)
		want := unhex(t, c.wire)
		if c.header {
			got = got[:len(want)]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoded % X, want % X", c.name, got, want)
			continue
		}
		full := encodeSRMP(t, c.kind, c.flag, c.seq, c.body)
		m, err := codec.DecodeSRMP(payload(full))
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		if m.Kind != c.kind || m.Flag != c.flag || m.Seq != c.seq || !bytes.Equal(m.Payload.AppendTo(nil), c.body) && len(c.body) > 0 {
			t.Errorf("%s: decoded %+v", c.name, m)
		}
		m.Release()
	}
}

// S9 (sticky input) and S10 (a frame split across reads).
func TestSRMPStickyAndSplitVectors(t *testing.T) {
	leakcheck.Check(t)
	frames := splitAll(t, codec.SRMPSplitter{}, codec.FramerConfig{}, unhex(t, "01 01 04 00 4F 70 65 6E 81 02 02 00 4F 4B"))
	if len(frames) != 2 || frames[0] != "01010400"+"4f70656e" || frames[1] != "810202004f4b" {
		t.Fatalf("S9 frames %v", frames)
	}
	frames = splitAll(t, codec.SRMPSplitter{}, codec.FramerConfig{}, unhex(t, "01 01 04"), unhex(t, "00 4F 70 65 6E"))
	if len(frames) != 1 || frames[0] != "010104004f70656e" {
		t.Fatalf("S10 frames %v", frames)
	}
}

// Length-field vectors of docs/PROTOCOL.md §2 (payload "hello").
func TestLengthFieldVectors(t *testing.T) {
	leakcheck.Check(t)
	hello := []byte("hello")
	cases := []struct {
		offset, size int
		wire         string
	}{
		{0, 2, "05 00 68 65 6C 6C 6F"},
		{0, -2, "00 05 68 65 6C 6C 6F"},
		{0, 4, "05 00 00 00 68 65 6C 6C 6F"},
		{0, -4, "00 00 00 05 68 65 6C 6C 6F"},
		{0, 1, "05 68 65 6C 6C 6F"},
		{2, 2, "00 00 05 00 68 65 6C 6C 6F"},
	}
	for _, c := range cases {
		lf := codec.LengthField{Offset: c.offset, Size: c.size}
		if err := lf.Validate(); err != nil {
			t.Fatal(err)
		}
		f, err := lf.Encode(payload(hello))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.AppendTo(nil); !bytes.Equal(got, unhex(t, c.wire)) {
			t.Errorf("offset %d size %d: % X", c.offset, c.size, got)
		}
		f.Release()
		if frames := splitAll(t, lf, codec.FramerConfig{}, unhex(t, c.wire)); len(frames) != 1 || frames[0] != hex.EncodeToString(unhex(t, c.wire)) {
			t.Errorf("offset %d size %d: framed %v", c.offset, c.size, frames)
		}
	}
	// Varint, 300 bytes: AC 02.
	lf := codec.LengthField{Size: codec.VarintLength}
	f, _ := lf.Encode(payload(make([]byte, 300)))
	if b := f.AppendTo(nil); !bytes.Equal(b[:2], []byte{0xAC, 0x02}) || len(b) != 302 {
		t.Errorf("varint header % X, len %d", b[:2], len(b))
	}
	f.Release()
	// The zero value is Size 2.
	if f, _ := (codec.LengthField{}).Encode(payload(hello)); !bytes.Equal(f.AppendTo(nil)[:2], []byte{5, 0}) {
		t.Error("zero LengthField is not Size 2")
	} else {
		f.Release()
	}
}

// Unlike NewLife, a payload too large for the field is an error.
func TestLengthFieldRefusesTruncation(t *testing.T) {
	leakcheck.Check(t)
	for _, size := range []int{1, 2, -2} {
		lf := codec.LengthField{Size: size}
		n := 256
		if size != 1 {
			n = 65536
		}
		if _, err := lf.Encode(payload(make([]byte, n))); !errors.Is(err, codec.ErrFrameTooLarge) {
			t.Errorf("size %d, %d bytes: %v", size, n, err)
		}
	}
	if err := (codec.LengthField{Size: 3}).Validate(); !errors.Is(err, codec.ErrConfig) {
		t.Errorf("size 3: %v, want ErrConfig", err)
	}
}

func TestDelimiterFrames(t *testing.T) {
	leakcheck.Check(t)
	frames := splitAll(t, codec.Delimiter{}, codec.FramerConfig{}, []byte("GET /\r\nHost: x\r"), []byte("\npartial"))
	if len(frames) != 2 || frames[0] != hex.EncodeToString([]byte("GET /\r\n")) || frames[1] != hex.EncodeToString([]byte("Host: x\r\n")) {
		t.Fatalf("frames %q", frames)
	}
	p := codec.Delimiter{Delim: []byte{0}}.Encode(payload([]byte("ab")))
	if got := p.AppendTo(nil); !bytes.Equal(got, []byte{'a', 'b', 0}) {
		t.Fatalf("encoded %q", got)
	}
	p.Release()
}

// splitAll feeds the inputs (each as an owned packet, as a receive loop
// would) and returns the frames as hex strings, copied while they are
// lent; a partial frame left at the end is dropped.
func splitAll(t testing.TB, s codec.Splitter, cfg codec.FramerConfig, inputs ...[]byte) []string {
	t.Helper()
	f := codec.NewFramer(s, cfg)
	var out []string
	emit := func(fr *packet.Packet) error {
		if !fr.Borrowed() {
			t.Errorf("emitted frame is not borrowed")
		}
		out = append(out, hex.EncodeToString(fr.AppendTo(nil)))
		return nil
	}
	for _, in := range inputs {
		p := packet.Get(len(in))
		copy(p.Bytes(), in)
		err := f.Feed(p, emit)
		p.Release()
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
	}
	f.Reset()
	return out
}
