package wstest_test

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

// rfcMask is the masking key of the RFC 6455 §5.7 examples.
var rfcMask = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// seq returns n bytes counting up from 0 (mod 256).
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

type vector struct {
	name    string
	wire    []byte
	fin     bool
	op      ws.Opcode
	masked  bool
	payload []byte
}

// rfcVectors are the examples of RFC 6455 §5.7.
func rfcVectors() []vector {
	hello := []byte("Hello")
	big256 := append([]byte{0x82, 0x7e, 0x01, 0x00}, seq(256)...)
	big64k := append([]byte{0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}, seq(65536)...)
	return []vector{
		{"unmasked text", []byte{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}, true, ws.Text, false, hello},
		{"masked text", []byte{0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}, true, ws.Text, true, hello},
		{"fragment 1", []byte{0x01, 0x03, 0x48, 0x65, 0x6c}, false, ws.Text, false, []byte("Hel")},
		{"fragment 2", []byte{0x80, 0x02, 0x6c, 0x6f}, true, ws.Continuation, false, []byte("lo")},
		{"unmasked ping", []byte{0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}, true, ws.Ping, false, hello},
		{"masked pong", []byte{0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}, true, ws.Pong, true, hello},
		{"256 bytes", big256, true, ws.Binary, false, seq(256)},
		{"64 KiB", big64k, true, ws.Binary, false, seq(65536)},
	}
}

func TestParseRFCVectors(t *testing.T) {
	for _, v := range rfcVectors() {
		t.Run(v.name, func(t *testing.T) {
			b := append(bytes.Clone(v.wire), 0xff) // a trailing byte must be left alone
			f, n, err := ws.Parse(b, 1<<20)
			if err != nil || n != len(v.wire) {
				t.Fatalf("Parse = n %d, err %v; want n %d", n, err, len(v.wire))
			}
			if f.Fin != v.fin || f.Op != v.op || f.Masked != v.masked || f.Length != int64(len(v.payload)) {
				t.Fatalf("header %+v, want fin %v op %v masked %v len %d", f.Header, v.fin, v.op, v.masked, len(v.payload))
			}
			if v.masked && f.Mask != rfcMask {
				t.Fatalf("mask %x, want %x", f.Mask, rfcMask)
			}
			if !bytes.Equal(f.Payload, v.payload) {
				t.Fatalf("payload %q, want %q", f.Payload, v.payload)
			}
			if cap(f.Payload) != len(f.Payload) {
				t.Fatalf("payload capacity %d not clipped to %d", cap(f.Payload), len(f.Payload))
			}
			if b[len(b)-1] != 0xff {
				t.Fatal("trailing byte modified")
			}
		})
	}
}

func TestAppendRFCVectors(t *testing.T) {
	for _, v := range rfcVectors() {
		t.Run(v.name, func(t *testing.T) {
			var mask *[4]byte
			if v.masked {
				mask = &rfcMask
			}
			hdr := ws.AppendHeader(nil, v.op, v.fin, len(v.payload), mask)
			if len(hdr) != ws.HeaderLen(len(v.payload), v.masked) {
				t.Fatalf("header length %d, HeaderLen %d", len(hdr), ws.HeaderLen(len(v.payload), v.masked))
			}
			if !bytes.Equal(hdr, v.wire[:len(hdr)]) {
				t.Fatalf("AppendHeader = % x, want % x", hdr, v.wire[:len(hdr)])
			}
			if v.fin {
				got := ws.AppendFrame([]byte("prefix"), v.op, v.payload, mask)
				if !bytes.Equal(got, append([]byte("prefix"), v.wire...)) {
					t.Fatalf("AppendFrame = % x, want % x", got, v.wire)
				}
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	for _, size := range []int{0, 1, 125, 126, 127, 65535, 65536, 70000} {
		for _, m := range []*[4]byte{nil, &mask} {
			payload := seq(size)
			b := ws.AppendFrame(nil, ws.Binary, payload, m)
			if len(b) != ws.HeaderLen(size, m != nil)+size {
				t.Fatalf("size %d masked %v: frame length %d", size, m != nil, len(b))
			}
			if m != nil && size > 4 && bytes.Equal(b[len(b)-size:], payload) {
				t.Fatalf("size %d: payload not masked", size)
			}
			f, n, err := ws.Parse(b, 1<<20)
			if err != nil || n != len(b) {
				t.Fatalf("size %d masked %v: n %d err %v", size, m != nil, n, err)
			}
			if !f.Fin || f.Op != ws.Binary || f.Masked != (m != nil) || f.Length != int64(size) {
				t.Fatalf("size %d: header %+v", size, f.Header)
			}
			if !bytes.Equal(f.Payload, payload) {
				t.Fatalf("size %d masked %v: payload differs", size, m != nil)
			}
		}
	}
}

// TestSplitPoints parses every prefix of each frame: all but the whole frame
// must ask for more bytes without error, and so must ParseHeader for every
// prefix of the header.
func TestSplitPoints(t *testing.T) {
	mask := [4]byte{9, 8, 7, 6}
	var frames [][]byte
	for _, v := range rfcVectors() {
		frames = append(frames, v.wire)
	}
	for _, size := range []int{0, 1, 125, 126, 65535, 65536} {
		frames = append(frames, ws.AppendFrame(nil, ws.Binary, seq(size), nil), ws.AppendFrame(nil, ws.Text, seq(size), &mask))
	}
	for _, wire := range frames {
		h, hn, err := ws.ParseHeader(wire)
		if err != nil || hn == 0 {
			t.Fatalf("ParseHeader(% x…) = n %d, err %v", wire[:2], hn, err)
		}
		for i := range hn {
			if _, n, err := ws.ParseHeader(wire[:i]); n != 0 || err != nil {
				t.Fatalf("ParseHeader of %d of %d header bytes = n %d, err %v", i, hn, n, err)
			}
		}
		for i := range len(wire) {
			if f, n, err := ws.Parse(wire[:i], 1<<20); n != 0 || err != nil || f.Payload != nil {
				t.Fatalf("Parse of %d of %d bytes (len %d) = n %d, err %v", i, len(wire), h.Length, n, err)
			}
		}
		// The prefixes must not have been modified: parse the whole frame
		// from a copy fed one byte at a time.
		var buf []byte
		for i, c := range wire {
			buf = append(buf, c)
			_, n, err := ws.Parse(buf, 1<<20)
			if err != nil {
				t.Fatalf("byte %d: %v", i, err)
			}
			if i < len(wire)-1 && n != 0 {
				t.Fatalf("byte %d of %d: n %d before the frame is complete", i, len(wire), n)
			}
			if i == len(wire)-1 && n != len(wire) {
				t.Fatalf("complete frame: n %d, want %d", n, len(wire))
			}
		}
	}
}

func TestParseTwoFrames(t *testing.T) {
	mask := [4]byte{0xde, 0xad, 0xbe, 0xef}
	b := ws.AppendFrame(nil, ws.Text, []byte("first"), &mask)
	b = ws.AppendFrame(b, ws.Binary, []byte("second!"), nil)
	f1, n1, err := ws.Parse(b, 100)
	if err != nil || string(f1.Payload) != "first" {
		t.Fatalf("first frame: %q, %v", f1.Payload, err)
	}
	f2, n2, err := ws.Parse(b[n1:], 100)
	if err != nil || string(f2.Payload) != "second!" || n1+n2 != len(b) {
		t.Fatalf("second frame: %q, n %d, %v", f2.Payload, n2, err)
	}
}

func TestNonMinimalLengthAccepted(t *testing.T) {
	b16 := []byte{0x82, 0x7e, 0x00, 0x03, 'a', 'b', 'c'}
	b64 := []byte{0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'}
	for _, b := range [][]byte{b16, b64} {
		f, n, err := ws.Parse(b, 10)
		if err != nil || n != len(b) || string(f.Payload) != "abc" {
			t.Fatalf("% x: %q, n %d, %v", b, f.Payload, n, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	maxLen := []byte{0x82, 0x7f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	tests := []struct {
		name   string
		b      []byte
		max    int
		want   error
		header bool // ParseHeader reports it too (it is not Parse's max check)
	}{
		{"rsv1", []byte{0xc1, 0x00}, 10, ws.ErrReservedBits, true},
		{"rsv2", []byte{0xa1, 0x00}, 10, ws.ErrReservedBits, true},
		{"rsv3", []byte{0x91, 0x00}, 10, ws.ErrReservedBits, true},
		{"opcode 3", []byte{0x83, 0x00}, 10, ws.ErrBadOpcode, true},
		{"opcode 7", []byte{0x87, 0x00}, 10, ws.ErrBadOpcode, true},
		{"opcode 11", []byte{0x8b, 0x00}, 10, ws.ErrBadOpcode, true},
		{"opcode 15", []byte{0x8f, 0x00}, 10, ws.ErrBadOpcode, true},
		{"fragmented ping", []byte{0x09, 0x00}, 10, ws.ErrControlFrame, true},
		{"fragmented close", []byte{0x08, 0x80, 1, 2, 3, 4}, 10, ws.ErrControlFrame, true},
		{"ping len 126", []byte{0x89, 0x7e, 0x00, 0x7e}, 1000, ws.ErrControlFrame, true},
		{"pong len 127", []byte{0x8a, 0x7f}, 1000, ws.ErrControlFrame, true},
		{"close len 126 masked", []byte{0x88, 0xfe}, 1000, ws.ErrControlFrame, true},
		{"64-bit length top bit", []byte{0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0}, 1 << 30, ws.ErrTooLarge, true},
		{"over max", []byte{0x82, 0x0b}, 10, ws.ErrTooLarge, false},
		{"over max, 16-bit", []byte{0x82, 0x7e, 0x01, 0x00}, 255, ws.ErrTooLarge, false},
		{"over max, 64-bit", maxLen, 1 << 30, ws.ErrTooLarge, false},
		{"negative max", []byte{0x82, 0x00}, -1, ws.ErrTooLarge, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The error must be reported from the bytes given, before any
			// payload arrives.
			f, n, err := ws.Parse(tt.b, tt.max)
			if !errors.Is(err, tt.want) || n != 0 || f.Payload != nil {
				t.Fatalf("Parse(% x) = n %d, err %v; want %v", tt.b, n, err, tt.want)
			}
			_, n, err = ws.ParseHeader(tt.b)
			if tt.header && (!errors.Is(err, tt.want) || n != 0) {
				t.Fatalf("ParseHeader(% x) = n %d, err %v; want %v", tt.b, n, err, tt.want)
			}
			if !tt.header && (err != nil || n == 0) {
				t.Fatalf("ParseHeader(% x) = n %d, err %v; want a header", tt.b, n, err)
			}
		})
	}
}

func TestNeedMoreShort(t *testing.T) {
	for _, b := range [][]byte{nil, {}, {0x81}, {0xff}} {
		if _, n, err := ws.ParseHeader(b); n != 0 || err != nil {
			t.Fatalf("ParseHeader(% x) = n %d, err %v", b, n, err)
		}
		if _, n, err := ws.Parse(b, 10); n != 0 || err != nil {
			t.Fatalf("Parse(% x) = n %d, err %v", b, n, err)
		}
	}
}

func TestHeaderLen(t *testing.T) {
	for _, tt := range []struct{ length, unmasked int }{
		{0, 2}, {125, 2}, {126, 4}, {65535, 4}, {65536, 10}, {1 << 40, 10},
	} {
		if got := ws.HeaderLen(tt.length, false); got != tt.unmasked {
			t.Errorf("HeaderLen(%d, false) = %d, want %d", tt.length, got, tt.unmasked)
		}
		if got := ws.HeaderLen(tt.length, true); got != tt.unmasked+4 {
			t.Errorf("HeaderLen(%d, true) = %d, want %d", tt.length, got, tt.unmasked+4)
		}
	}
}

func TestAppendHeaderNegativePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	ws.AppendHeader(nil, ws.Binary, true, -1, nil)
}

func TestOpcode(t *testing.T) {
	for op, want := range map[ws.Opcode]string{
		ws.Continuation: "Continuation", ws.Text: "Text", ws.Binary: "Binary",
		ws.Close: "Close", ws.Ping: "Ping", ws.Pong: "Pong", 3: "Opcode(3)",
	} {
		if op.String() != want {
			t.Errorf("%d.String() = %q, want %q", byte(op), op.String(), want)
		}
		if got := op.IsControl(); got != (op >= 8) {
			t.Errorf("%v.IsControl() = %v", op, got)
		}
	}
}

func TestClose(t *testing.T) {
	mask := [4]byte{5, 6, 7, 8}
	for _, m := range []*[4]byte{nil, &mask} {
		b := ws.AppendClose(nil, ws.CloseNormal, "bye", m)
		f, n, err := ws.Parse(b, 125)
		if err != nil || n != len(b) || f.Op != ws.Close || !f.Fin || f.Masked != (m != nil) {
			t.Fatalf("close frame: %+v n %d err %v", f.Header, n, err)
		}
		if code, reason := ws.CloseCode(f.Payload); code != ws.CloseNormal || reason != "bye" {
			t.Fatalf("CloseCode = %d %q", code, reason)
		}
	}
	// A reason too long for a control frame is cut at a rune boundary.
	long := string(bytes.Repeat([]byte("é"), 100)) // 200 bytes
	b := ws.AppendClose(nil, ws.CloseTooBig, long, &mask)
	f, _, err := ws.Parse(b, 1000)
	if err != nil {
		t.Fatalf("long reason: %v", err)
	}
	code, reason := ws.CloseCode(f.Payload)
	if code != ws.CloseTooBig || len(reason) != 122 || !utf8.ValidString(reason) {
		t.Fatalf("long reason: code %d, %d bytes, valid %v", code, len(reason), utf8.ValidString(reason))
	}
	ascii := string(bytes.Repeat([]byte("x"), 200))
	f, _, _ = ws.Parse(ws.AppendClose(nil, ws.CloseProtocolError, ascii, nil), 1000)
	if code, reason := ws.CloseCode(f.Payload); code != ws.CloseProtocolError || reason != ascii[:123] {
		t.Fatalf("ascii reason: %d, %d bytes", code, len(reason))
	}
	// Code 0: empty payload.
	b = ws.AppendClose(nil, 0, "ignored", nil)
	if !bytes.Equal(b, []byte{0x88, 0x00}) {
		t.Fatalf("AppendClose(0) = % x", b)
	}
	for _, p := range [][]byte{nil, {0x03}} {
		if code, reason := ws.CloseCode(p); code != ws.CloseNoStatus || reason != "" {
			t.Fatalf("CloseCode(% x) = %d %q", p, code, reason)
		}
	}
	if code, reason := ws.CloseCode([]byte{0x03, 0xe8}); code != 1000 || reason != "" {
		t.Fatalf("CloseCode(03 e8) = %d %q", code, reason)
	}
}

func TestNoAllocs(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	masked := ws.AppendFrame(nil, ws.Binary, seq(1000), &mask)
	unmasked := ws.AppendFrame(nil, ws.Binary, seq(70000), nil)
	dst := make([]byte, 0, 64)
	payload := seq(4096)
	var sink int
	for name, fn := range map[string]func(){
		"ParseHeader": func() {
			_, n, _ := ws.ParseHeader(masked)
			sink += n
		},
		"Parse masked": func() {
			f, n, _ := ws.Parse(masked, 1<<20) // toggles the payload; fine here
			sink += n + len(f.Payload)
		},
		"Parse unmasked": func() {
			_, n, _ := ws.Parse(unmasked, 1<<20)
			sink += n
		},
		"Parse need more": func() {
			_, n, _ := ws.Parse(unmasked[:100], 1<<20)
			sink += n
		},
		"Parse error": func() {
			_, _, err := ws.Parse([]byte{0xc1, 0}, 10)
			sink += len(err.Error())
		},
		"AppendHeader": func() {
			dst = ws.AppendHeader(dst[:0], ws.Binary, true, 70000, &mask)
		},
		"AppendClose": func() {
			dst = ws.AppendClose(dst[:0], ws.CloseNormal, "bye", &mask)
		},
		"Unmask": func() {
			ws.Unmask(payload, mask, 3)
		},
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, a)
		}
	}
	allocSink = sink
}

// allocSink keeps TestNoAllocs' results alive.
var allocSink int
