package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
)

// r1Body is the body of vector R1's request (vectors_test.go; the body
// layout is docs/PROTOCOL.md §5.1): Bench/Add {"a":1,"b":2}.
var r1Body = []byte("\x09Bench/Add\x0d\x00\x00\x00{\"a\":1,\"b\":2}")

// r3Body is the body of R3's error reply (404, 42 bytes of message).
func r3Body() []byte {
	msg := "无法找到名为[Bench/Nope]的服务！"
	b := append([]byte{10}, "Bench/Nope"...)
	b = binary.LittleEndian.AppendUint32(b, 404)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(msg)))
	return append(b, msg...)
}

func TestBatteryParseBodyVectors(t *testing.T) {
	cases := []struct {
		name     string
		in       []byte
		withCode bool
		action   string
		code     int32
		data     string
		hasData  bool
	}{
		{"R1 request", r1Body, false, "Bench/Add", 0, `{"a":1,"b":2}`, true},
		{"R2 reply", []byte("\x09Bench/Add\x01\x00\x00\x003"), false, "Bench/Add", 0, "3", true},
		{"R3 error reply", r3Body(), true, "Bench/Nope", 404, "无法找到名为[Bench/Nope]的服务！", true},
		{"R4 no-arg request", []byte("\x0bBench/NoArg"), false, "Bench/NoArg", 0, "", false},
		{"R5 bytes", []byte("\x10Bench/EchoPacket\x04\x00\x00\x00\x00\x01\x02\x03"), false, "Bench/EchoPacket", 0, "\x00\x01\x02\x03", true},
		{"R6 error reply", []byte("\x0aUser/Login\x91\x01\x00\x00\x0c\x00\x00\x00Unauthorized"), true, "User/Login", 401, "Unauthorized", true},
		{"R7 push", []byte("\x06Notify\x1c\x00\x00\x00{\"Id\":1,\"Command\":\"restart\"}"), false, "Notify", 0, `{"Id":1,"Command":"restart"}`, true},
		{"empty string value", []byte("\x10Bench/EchoString\x00\x00\x00\x00"), false, "Bench/EchoString", 0, "", true},
		{"error reply without data", []byte("\x01X\xf4\x01\x00\x00"), true, "X", 500, "", false},
		{"empty name", []byte{0}, false, "", 0, "", false},
	}
	for _, c := range cases {
		m, err := parseBody(c.in, c.withCode)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(m.action) != c.action || m.code != c.code || string(m.data) != c.data || (m.data != nil) != c.hasData {
			t.Errorf("%s: got action %q code %d data %q hasData %v; want %q %d %q %v",
				c.name, m.action, m.code, m.data, m.data != nil, c.action, c.code, c.data, c.hasData)
		}
		if !c.hasData && m.data != nil {
			t.Errorf("%s: a null value has data %q", c.name, m.data)
		}
	}
}

// A body cut anywhere is an error, except where the cut leaves a whole
// shorter body (the name alone: a null value; the code alone on an error
// reply). Nothing panics.
func TestBatteryParseBodyTruncated(t *testing.T) {
	cases := []struct {
		name     string
		in       []byte
		withCode bool
		valid    []int // cut points that leave a valid body
	}{
		{"R1", r1Body, false, []int{10}},
		{"R3", r3Body(), true, []int{15}},
		{"R5", []byte("\x10Bench/EchoPacket\x04\x00\x00\x00\x00\x01\x02\x03"), false, []int{17}},
		{"R6", []byte("\x0aUser/Login\x91\x01\x00\x00\x0c\x00\x00\x00Unauthorized"), true, []int{15}},
	}
	for _, c := range cases {
		for k := 0; k < len(c.in); k++ {
			ok := false
			for _, v := range c.valid {
				ok = ok || v == k
			}
			_, err := parseBody(c.in[:k:k], c.withCode)
			switch {
			case ok && err != nil:
				t.Errorf("%s cut at %d: %v, want a body without data", c.name, k, err)
			case !ok && err == nil:
				t.Errorf("%s cut at %d of %d: parsed, want an error", c.name, k, len(c.in))
			case !ok && !errors.Is(err, ErrBody):
				t.Errorf("%s cut at %d: error %v does not wrap ErrBody", c.name, k, err)
			}
		}
	}
}

// The code field is read only for error replies: the same bytes read the
// other way are an error or a different body.
func TestBatteryParseBodyCodeOnlyWithCode(t *testing.T) {
	if _, err := parseBody(r3Body(), false); err == nil {
		t.Error("an error reply parsed as a plain body: its code was taken for a data length and accepted")
	}
	if _, err := parseBody([]byte("\x09Bench/Add"), true); err == nil {
		t.Error("a name-only body parsed as an error reply without a code")
	}
	if _, err := parseBody([]byte("\x09Bench/Add\x01\x00\x00\x003"), true); err == nil {
		t.Error("R2 read as an error reply parsed (its length field taken for a code, one stray byte)")
	}
	if _, err := parseBody([]byte("\x01X\xff\xff\xff\xff"), false); err == nil {
		t.Error("a negative data length was accepted")
	}
	if _, err := parseBody([]byte{0x80}, false); err == nil {
		t.Error("a truncated varint name length was accepted")
	}
}

// encodeBody re-encodes a parsed body with the package's own writers.
func encodeBody(m body, withCode bool) []byte {
	out := appendName(nil, m.action)
	if withCode {
		out = binary.LittleEndian.AppendUint32(out, uint32(m.code))
	}
	if m.data != nil {
		out = appendDataLen(out, len(m.data))
		out = append(out, m.data...)
	}
	return out
}

func FuzzBody(f *testing.F) {
	seeds := [][]byte{
		r1Body, r3Body(), {}, {0}, {0x80}, {0x80, 0x00},
		[]byte("\x09Bench/Add\x01\x00\x00\x003"),
		[]byte("\x0bBench/NoArg"),
		[]byte("\x10Bench/EchoPacket\x04\x00\x00\x00\x00\x01\x02\x03"),
		[]byte("\x0aUser/Login\x91\x01\x00\x00\x0c\x00\x00\x00Unauthorized"),
		[]byte("\x06Notify\x1c\x00\x00\x00{\"Id\":1,\"Command\":\"restart\"}"),
		[]byte("\x01X\xff\xff\xff\xff"), []byte("\x01X\x00\x00\x00"),
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, in []byte, withCode bool) {
		m, err := parseBody(in, withCode)
		if err != nil {
			if !errors.Is(err, ErrBody) {
				t.Fatalf("error %v does not wrap ErrBody", err)
			}
			return
		}
		out := encodeBody(m, withCode)
		if len(out) > len(in) {
			t.Fatalf("re-encoding is longer (%d) than the input (%d)", len(out), len(in))
		}
		again, err := parseBody(out, withCode)
		if err != nil {
			t.Fatalf("re-encoded body % X does not parse: %v", out, err)
		}
		if !bytes.Equal(again.action, m.action) || again.code != m.code || (again.data != nil) != (m.data != nil) || !bytes.Equal(again.data, m.data) {
			t.Fatalf("round trip changed the body: %+v → %+v", m, again)
		}
		// With a minimal name length the re-encoding is the input's prefix.
		if _, k := binary.Uvarint(in); k == len(binary.AppendUvarint(nil, uint64(len(m.action)))) && !bytes.HasPrefix(in, out) {
			t.Fatalf("re-encoding % X is not a prefix of % X", out, in)
		}
	})
}

func TestBatteryAppendValue(t *testing.T) {
	type point struct {
		X, Y int
		Name string `json:"name"`
	}
	var nilMap map[string]int
	var nilPtr *point
	var nilSlice []int
	ts := time.Date(2024, 3, 5, 7, 8, 9, 500, time.UTC)
	cases := []struct {
		v    any
		want string
		k    kind
	}{
		{nil, "", kindNull},
		{"héllo", "héllo", kindText},
		{"", "", kindText},
		{[]byte{0, 1, 2}, "\x00\x01\x02", kindRaw},
		{[]byte{}, "", kindRaw},
		{[]byte(nil), "", kindNull},
		{true, "True", kindBool},
		{false, "False", kindBool},
		{int(-1), "-1", kindNumber},
		{int8(math.MinInt8), "-128", kindNumber},
		{int16(math.MaxInt16), "32767", kindNumber},
		{int32(math.MinInt32), "-2147483648", kindNumber},
		{int64(math.MaxInt64), "9223372036854775807", kindNumber},
		{uint(7), "7", kindNumber},
		{uint8(255), "255", kindNumber},
		{uint16(65535), "65535", kindNumber},
		{uint32(math.MaxUint32), "4294967295", kindNumber},
		{uint64(math.MaxUint64), "18446744073709551615", kindNumber},
		{3.14, "3.14", kindNumber},
		{float32(3.14), "3.14", kindNumber},
		{-2.5, "-2.5", kindNumber},
		{1e20, "1E+20", kindNumber},
		{1e15, "1E+15", kindNumber},
		{123456789012345.0, "123456789012345", kindNumber},
		{1e-7, "1E-07", kindNumber},
		{0.0001, "0.0001", kindNumber},
		{0.0, "0", kindNumber},
		{math.NaN(), "NaN", kindNumber},
		{ts, "2024-03-05 07:08:09", kindTimeUTC}, // text in a data block; JSON: NewLife's "…T…Z"
		{point{1, 2, "p"}, `{"X":1,"Y":2,"name":"p"}`, kindJSON},
		{&point{3, 4, ""}, `{"X":3,"Y":4,"name":""}`, kindJSON},
		{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`, kindJSON},
		{[]string{"x"}, `["x"]`, kindJSON},
		{json.RawMessage(`[1, 2]`), `[1, 2]`, kindJSON},
		{errors.New("boom"), "boom", kindText},
		{nilMap, "", kindNull},
		{nilPtr, "", kindNull},
		{nilSlice, "", kindNull},
	}
	for _, c := range cases {
		got, k, err := appendValue([]byte("pre"), c.v)
		if err != nil {
			t.Errorf("%T %v: %v", c.v, c.v, err)
			continue
		}
		if string(got) != "pre"+c.want || k != c.k {
			t.Errorf("%T %v: got %q kind %d, want %q kind %d", c.v, c.v, got[3:], k, c.want, c.k)
		}
	}
	if _, _, err := appendValue(nil, make(chan int)); err == nil {
		t.Error("a channel encoded without an error")
	}
}

// .NET writes a double in positional form only while its scientific
// exponent is above -5 (the "G"/"R" rule): 0.0001 is "0.0001", but 0.00001
// is "1E-05".
func TestBatteryAppendValueSmallFloats(t *testing.T) {

	for _, c := range []struct {
		v    float64
		want string
	}{{1e-5, "1E-05"}, {1.5e-5, "1.5E-05"}, {9.99e-5, "9.99E-05"}, {1e-4, "0.0001"}} {
		got, _, _ := appendValue(nil, c.v)
		if string(got) != c.want {
			t.Errorf("%g: got %q, want %q", c.v, got, c.want)
		}
	}
}
