package rpc

import (
	"errors"
	"reflect"
	"testing"
)

// decodeResult reads a reply's text as NewLife writes values: numbers and
// bools as text, possibly quoted, strings raw.
func TestDecodeResultTexts(t *testing.T) {
	type name string
	for _, c := range []struct {
		data string
		dst  any // a pointer to the zero value of the type decoded into
		want any
	}{
		{"42", new(int32), int32(42)},
		{" 42\r\n", new(int32), int32(42)},
		{`"42"`, new(int64), int64(42)},
		{`"\u0034\u0032"`, new(int), 42}, // quotes around escapes: unescaped first
		{"True", new(bool), true},
		{`"false"`, new(bool), false},
		{"18446744073709551615", new(uint64), uint64(18446744073709551615)},
		{"-1.5", new(float64), -1.5},
		{"2.5", new(float32), float32(2.5)},
		{`"a\"b"`, new(name), name(`a"b`)}, // a named string is trimmed and unquoted
		{` plain `, new(name), name("plain")},
		{`"raw"`, new(string), `"raw"`}, // *string takes the text as it came
	} {
		if err := decodeResult([]byte(c.data), c.dst); err != nil {
			t.Errorf("decodeResult(%q, %T): %v", c.data, c.dst, err)
			continue
		}
		if got := reflect.ValueOf(c.dst).Elem().Interface(); got != c.want {
			t.Errorf("decodeResult(%q, %T) = %#v, want %#v", c.data, c.dst, got, c.want)
		}
	}
}

func TestDecodeResultRejectsBadNumbers(t *testing.T) {
	for _, c := range []struct {
		data string
		dst  any
	}{
		{"4x", new(int32)},
		{"300", new(int8)},
		{`"-1"`, new(uint)},
		{"yes", new(bool)},
		{`"1.5.2"`, new(float64)},
	} {
		err := decodeResult([]byte(c.data), c.dst)
		if !errors.Is(err, ErrArgs) {
			t.Errorf("decodeResult(%q, %T) = %v, want ErrArgs", c.data, c.dst, err)
		}
	}
}

// A call's number or bool result is decoded without garbage: the client's
// steady state allocates nothing per call.
func TestDecodeResultNumbersAllocateNothing(t *testing.T) {
	var (
		i32 int32
		i64 int64
		b   bool
		f   float64
	)
	for _, c := range []struct {
		data string
		dst  any
	}{
		{"42", &i32}, {`"-9223372036854775808"`, &i64}, {"True", &b}, {"3.25", &f},
	} {
		data := []byte(c.data)
		allocs := testing.AllocsPerRun(100, func() {
			if err := decodeResult(data, c.dst); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("decodeResult(%q, %T): %v allocations, want 0", c.data, c.dst, allocs)
		}
	}
}
