package codec_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
)

// The malformed-frame tables of issue 13's standing battery (item 1): per
// codec, declared lengths at and around every limit the header can express,
// a valid frame cut at every offset (then the peer's EOF, or silence until
// the frame expires), and for SRMP every kind with odd flags. Each case
// states what the server must do with those bytes; framer_malformed_test.go
// runs the cases against a framer and against a real server.

// frameCase is bytes a peer sends on a fresh connection and what follows.
type frameCase struct {
	name string
	in   []byte
	// hold: the peer then keeps the connection open and silent, so the
	// server must end it; otherwise the peer half-closes after in.
	hold bool
	// want is the cause the server ends the connection with, as a protocol
	// violation (ErrFrameTooLarge, ErrCorruptFrame, ErrFrameExpired); nil:
	// the connection ends by the peer's close.
	want error
	// sizes are the payload sizes of the messages the handler gets before
	// the end, in order.
	sizes []int
	// unknown counts SRMP replies the server's matcher drops: a server has
	// no requests of its own, so every reply is unknown to it.
	unknown uint64
	// partial: in ends inside a frame (a framer holds bytes at the end).
	partial bool
	// frame, for a truncated frame, is the length of the whole frame: what
	// the framer holds for it must never pass it (nor the size class of the
	// pool serving it).
	frame int
}

// frameTable is one codec configuration and its cases.
type frameTable struct {
	name  string
	split codec.Splitter
	cfg   codec.FramerConfig
	stage func() codec.Handler
	// size is the payload size of a message the handler gets.
	size  func(msg any) int
	cases []frameCase
}

// tableExpire is the frame deadline of every table: short, so that the
// silent peers of the "then silence" cases are closed quickly.
const tableExpire = 150 * time.Millisecond

// truncations adds, for every proper prefix of frame (after the complete
// frames of before, sent in the same write), a case ending in the peer's
// EOF and one ending in silence until the frame expires.
func truncations(name string, before []byte, beforeSizes []int, frame []byte) []frameCase {
	ks := make([]int, len(frame)-1)
	for i := range ks {
		ks[i] = i + 1
	}
	return truncationsAt(name, before, beforeSizes, frame, ks...)
}

// truncationsAt is truncations at the offsets ks only.
func truncationsAt(name string, before []byte, beforeSizes []int, frame []byte, ks ...int) []frameCase {
	var out []frameCase
	for _, k := range ks {
		in := append(append([]byte(nil), before...), frame[:k]...)
		out = append(out,
			frameCase{name: fmt.Sprintf("%s cut at %d then EOF", name, k), in: in, sizes: beforeSizes, partial: true, frame: len(frame)},
			frameCase{name: fmt.Sprintf("%s cut at %d then silence", name, k), in: in, hold: true, want: codec.ErrFrameExpired, sizes: beforeSizes, partial: true, frame: len(frame)},
		)
	}
	return out
}

// valid is a case of whole frames followed by the peer's EOF.
func valid(name string, in []byte, sizes ...int) frameCase {
	return frameCase{name: name, in: in, sizes: sizes}
}

// refused is a case the server must end at once with want, the peer
// silent after in (so that only the server can end it).
func refused(name string, in []byte, want error, sizes ...int) frameCase {
	return frameCase{name: name, in: in, hold: true, want: want, sizes: sizes}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func filler(n int) []byte { return bytes.Repeat([]byte{0x5A}, n) }

// SRMP headers written by hand, so that they can declare anything.
func srmpShort(b0, seq byte, n uint16) []byte {
	return []byte{b0, seq, byte(n), byte(n >> 8)}
}

func srmpLong(b0, seq byte, n uint32) []byte {
	h := []byte{b0, seq, 0xFF, 0xFF, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(h[4:], n)
	return h
}

// srmpRequest is the first byte of a request with FlagPacket.
const srmpRequest = byte(codec.KindRequest)<<6 | codec.FlagPacket

func srmpSize(msg any) int {
	if p := msg.(*codec.Message).Payload; p != nil {
		return p.Total()
	}
	return 0
}

func packetSize(msg any) int { return msg.(*packet.Packet).Total() }

// srmpTable: SRMP with a 1 KiB frame limit, where every declared length
// past the short form's range is over the limit.
func srmpTable() frameTable {
	const max = 1024
	cfg := codec.FramerConfig{MaxFrame: max, Expire: tableExpire}
	cases := []frameCase{
		valid("length 0", srmpShort(srmpRequest, 1, 0), 0),
		valid("length 0, long form", srmpLong(srmpRequest, 1, 0), 0),
		valid("length header−1", cat(srmpShort(srmpRequest, 1, 3), filler(3)), 3),
		valid("length max", cat(srmpShort(srmpRequest, 1, max-4), filler(max-4)), max-4),
		valid("length max, long form", cat(srmpLong(srmpRequest, 1, max-8), filler(max-8)), max-8),
		valid("three frames in one write", cat(srmpShort(srmpRequest, 1, 1), filler(1), srmpShort(srmpRequest, 2, 0), srmpLong(srmpRequest, 3, 2), filler(2)), 1, 0, 2),
		refused("length max+1", srmpShort(srmpRequest, 1, max-3), codec.ErrFrameTooLarge),
		refused("length max+1, long form", srmpLong(srmpRequest, 1, max-7), codec.ErrFrameTooLarge),
		refused("length max+1 with its payload", cat(srmpShort(srmpRequest, 1, max-3), filler(max-3)), codec.ErrFrameTooLarge),
		refused("length 65534, the largest short form", srmpShort(srmpRequest, 1, 0xFFFE), codec.ErrFrameTooLarge),
		refused("length 65535, long form", srmpLong(srmpRequest, 1, 0xFFFF), codec.ErrFrameTooLarge),
		refused("length 2^31−1", srmpLong(srmpRequest, 1, 1<<31-1), codec.ErrFrameTooLarge),
		refused("length 2^31", srmpLong(srmpRequest, 1, 1<<31), codec.ErrCorruptFrame),
		refused("length 2^32−1", srmpLong(srmpRequest, 1, 1<<32-1), codec.ErrCorruptFrame),
		refused("a frame, then length max+1", cat(srmpShort(srmpRequest, 1, 5), filler(5), srmpShort(srmpRequest, 2, max-3)), codec.ErrFrameTooLarge, 5),
		refused("a frame, then length 2^32−1", cat(srmpShort(srmpRequest, 1, 5), filler(5), srmpLong(srmpRequest, 2, 1<<32-1)), codec.ErrCorruptFrame, 5),
	}
	// Every kind, with flags SRMP leaves to the application (all six bits
	// are advisory): requests and one-way messages reach the handler with
	// their flag; replies and error replies match no request of the server
	// and are dropped, counted; none ends the connection.
	for kind := range codec.Kind(4) {
		for _, flag := range []uint8{0, 0x15, 0x3F} {
			c := valid(fmt.Sprintf("kind %d flag %#x", kind, flag), cat(srmpShort(byte(kind)<<6|flag, byte(flag), 2), []byte("hi")))
			if kind == codec.KindReply || kind == codec.KindError {
				c.unknown = 1
			} else {
				c.sizes = []int{2}
			}
			cases = append(cases, c)
		}
	}
	short := cat(srmpShort(srmpRequest, 7, 12), filler(12))
	long := cat(srmpLong(srmpRequest, 8, 12), filler(12))
	cases = append(cases, truncations("short frame", nil, nil, short)...)
	cases = append(cases, truncations("long-form frame", nil, nil, long)...)
	cases = append(cases, truncations("frame after a whole one", short, []int{12}, cat(srmpShort(srmpRequest, 2, 2), filler(2)))...)
	return frameTable{name: "srmp 1KiB", split: codec.SRMPSplitter{}, cfg: cfg, stage: codec.SRMPFraming(cfg), size: srmpSize, cases: cases}
}

// srmpLargeTable: SRMP with a limit past the short form, so that the long
// form's own limit case is a real frame.
func srmpLargeTable() frameTable {
	const max = 70000
	cfg := codec.FramerConfig{MaxFrame: max, Expire: tableExpire}
	big := cat(srmpLong(srmpRequest, 9, 66000), filler(66000))
	cases := []frameCase{
		valid("length 65534, the largest short form", cat(srmpShort(srmpRequest, 1, 0xFFFE), filler(0xFFFE)), 0xFFFE),
		valid("length max, long form", cat(srmpLong(srmpRequest, 1, max-8), filler(max-8)), max-8),
		refused("length max+1, long form", srmpLong(srmpRequest, 1, max-7), codec.ErrFrameTooLarge),
		refused("length 2^31−1", srmpLong(srmpRequest, 1, 1<<31-1), codec.ErrFrameTooLarge),
		refused("length 2^31", srmpLong(srmpRequest, 1, 1<<31), codec.ErrCorruptFrame),
		refused("length 2^32−1", srmpLong(srmpRequest, 1, 1<<32-1), codec.ErrCorruptFrame),
	}
	cases = append(cases, truncationsAt("66000-byte frame", nil, nil, big, 1, 3, 4, 7, 8, 4096, 65535, len(big)-1)...)
	return frameTable{name: "srmp 70000", split: codec.SRMPSplitter{}, cfg: cfg, stage: codec.SRMPFraming(cfg), size: srmpSize, cases: cases}
}

// lfField writes a length-field header declaring n (anything the field's
// bytes can hold, valid or not).
func lfField(lf codec.LengthField, n uint64) []byte {
	h := make([]byte, lf.Offset, lf.Offset+8)
	switch lf.Size {
	case 1:
		return append(h, byte(n))
	case 0, 2:
		return binary.LittleEndian.AppendUint16(h, uint16(n))
	case -2:
		return binary.BigEndian.AppendUint16(h, uint16(n))
	case 4:
		return binary.LittleEndian.AppendUint32(h, uint32(n))
	case -4:
		return binary.BigEndian.AppendUint32(h, uint32(n))
	}
	return binary.AppendUvarint(h, n) // LEB128, as VarintLength
}

// lfTable: a length-field format with a limit below what its field can
// express, so that max+1 is a declared length like any other.
func lfTable(lf codec.LengthField, max int) frameTable {
	cfg := codec.FramerConfig{MaxFrame: max, Expire: tableExpire}
	hdr := func(n uint64) int { return len(lfField(lf, n)) }
	frame := func(n int) []byte { return cat(lfField(lf, uint64(n)), filler(n)) }
	maxPayload := max - hdr(uint64(max))
	cases := []frameCase{
		valid("length 0", frame(0), 0),
		valid("length header−1", frame(hdr(0)-1), hdr(0)-1),
		valid("length max", frame(maxPayload), maxPayload),
		valid("three frames in one write", cat(frame(1), frame(0), frame(2)), 1, 0, 2),
		refused("length max+1", lfField(lf, uint64(maxPayload+1)), codec.ErrFrameTooLarge),
		refused("length max+1 with its payload", frame(maxPayload+1), codec.ErrFrameTooLarge),
		refused("a frame, then length max+1", cat(frame(5), lfField(lf, uint64(maxPayload+1))), codec.ErrFrameTooLarge, 5),
	}
	// The largest lengths each field can hold: over the limit, or (a
	// signed 32-bit field, a varint past 2^31−1) not a length at all.
	var widest uint64
	switch lf.Size {
	case 1:
		widest = 1<<8 - 1
	case 0, 2, -2:
		widest = 1<<16 - 1
	default:
		widest = 1<<32 - 1
	}
	for _, n := range []uint64{1<<8 - 1, 1<<16 - 1, 1<<31 - 1, 1 << 31, 1<<32 - 1} {
		if n > widest || n+uint64(hdr(n)) <= uint64(max) {
			continue // not expressible, or a length within the limit
		}
		want := codec.ErrFrameTooLarge
		if n >= 1<<31 {
			want = codec.ErrCorruptFrame
		}
		cases = append(cases, refused(fmt.Sprintf("length %d", n), lfField(lf, n), want))
	}
	if lf.Size == codec.VarintLength {
		cases = append(cases,
			valid("length 0 as a padded varint", cat(make([]byte, lf.Offset), []byte{0x80, 0x00}), 0),
			refused("a varint of six bytes", cat(make([]byte, lf.Offset), []byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x00}), codec.ErrCorruptFrame),
			refused("length 2^35−1", cat(make([]byte, lf.Offset), []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x7F}), codec.ErrCorruptFrame),
		)
	}
	f := frame(12)
	cases = append(cases, truncations("frame", nil, nil, f)...)
	cases = append(cases, truncations("frame after a whole one", f, []int{12}, frame(3))...)
	return frameTable{
		name: fmt.Sprintf("length field %s offset %d", fieldName(lf.Size), lf.Offset), split: lf, cfg: cfg,
		stage: codec.LengthFieldFraming(lf, cfg), size: packetSize, cases: cases,
	}
}

// fieldName names a length field's size.
func fieldName(size int) string {
	switch size {
	case codec.VarintLength:
		return "varint"
	case 0:
		return "size 2 (zero value)"
	}
	return fmt.Sprintf("size %d", size)
}

// delimiterTable: lines of at most max bytes, delimiter included.
func delimiterTable(d []byte, max int) frameTable {
	cfg := codec.FramerConfig{MaxFrame: max, Expire: tableExpire}
	line := func(n int) []byte { return cat(filler(n-len(d)), d) }
	cases := []frameCase{
		valid("empty line", d, len(d)),
		valid("line of max bytes", line(max), max),
		valid("three lines in one write", cat(line(len(d)+1), d, line(7)), len(d)+1, len(d), 7),
		valid("delimiter bytes apart", cat(d[:1], []byte("x"), d[1:], d), 2*len(d)+1),
		refused("line of max+1 bytes", line(max+1), codec.ErrFrameTooLarge),
		refused("max bytes without a delimiter", filler(max), codec.ErrFrameTooLarge),
		refused("4 KiB without a delimiter", filler(4096), codec.ErrFrameTooLarge),
		refused("a line, then max+1 bytes", cat(line(9), line(max+1)), codec.ErrFrameTooLarge, 9),
		{name: "max−1 bytes without a delimiter, then silence", in: filler(max - 1), hold: true, want: codec.ErrFrameExpired, partial: true, frame: max},
		{name: "max−1 bytes without a delimiter, then EOF", in: filler(max - 1), partial: true, frame: max},
	}
	text := cat([]byte("hello, hostile world 0123456789"), d)
	cases = append(cases, truncations("line", nil, nil, text)...)
	cases = append(cases, truncations("line after a whole one", line(5), []int{5}, line(9))...)
	return frameTable{
		name: fmt.Sprintf("delimiter %q", d), split: codec.Delimiter{Delim: d}, cfg: cfg,
		stage: codec.DelimiterFraming(codec.Delimiter{Delim: d}, cfg), size: packetSize, cases: cases,
	}
}

// frameTables are every table of the battery.
func frameTables() []frameTable {
	return []frameTable{
		srmpTable(),
		srmpLargeTable(),
		lfTable(codec.LengthField{Size: 1}, 100),
		lfTable(codec.LengthField{}, 1024),
		lfTable(codec.LengthField{Offset: 3, Size: -2}, 1024),
		lfTable(codec.LengthField{Size: 4}, 1024),
		lfTable(codec.LengthField{Offset: 1, Size: -4}, 1024),
		lfTable(codec.LengthField{Size: codec.VarintLength}, 1024),
		lfTable(codec.LengthField{Offset: 2, Size: codec.VarintLength}, 1024),
		delimiterTable([]byte("\r\n"), 64),
		delimiterTable([]byte("<|>"), 48),
	}
}
