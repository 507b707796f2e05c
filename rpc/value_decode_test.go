package rpc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// decodeBuiltin, the reflection-free path for predeclared bools and
// numbers, decodes every text as the reflect path does for a named type of
// the same kind: the same value stored (on errors too) and the same error.
func TestDecodeBuiltinMatchesReflect(t *testing.T) {
	type (
		i   int
		i8  int8
		i16 int16
		i32 int32
		i64 int64
		u   uint
		u8  uint8
		u16 uint16
		u32 uint32
		u64 uint64
		f32 float32
		f64 float64
		bl  bool
	)
	pairs := []struct{ fast, named func() any }{
		{func() any { return new(int) }, func() any { return new(i) }},
		{func() any { return new(int8) }, func() any { return new(i8) }},
		{func() any { return new(int16) }, func() any { return new(i16) }},
		{func() any { return new(int32) }, func() any { return new(i32) }},
		{func() any { return new(int64) }, func() any { return new(i64) }},
		{func() any { return new(uint) }, func() any { return new(u) }},
		{func() any { return new(uint8) }, func() any { return new(u8) }},
		{func() any { return new(uint16) }, func() any { return new(u16) }},
		{func() any { return new(uint32) }, func() any { return new(u32) }},
		{func() any { return new(uint64) }, func() any { return new(u64) }},
		{func() any { return new(float32) }, func() any { return new(f32) }},
		{func() any { return new(float64) }, func() any { return new(f64) }},
		{func() any { return new(bool) }, func() any { return new(bl) }},
	}
	texts := []string{"42", " -7\r\n", `"300"`, `"\u0034\u0032"`, "70000", "4294967296", "-1",
		"1e3", "2.5", "NaN", "True", "false", `"1"`, "", "x", `"`, `"\"`, "99999999999999999999", "-0", "007", "+5", "-", "127", "128", "-128", "-129", "255", "256",
		"65535", "65536", "2147483647", "2147483648", "-2147483648", "-2147483649", "999999999999999999",
		"-999999999999999999", "1000000000000000000", "18446744073709551615", "18446744073709551616",
		strings.Repeat("9", 100)}
	for _, p := range pairs {
		for _, text := range texts {
			fast, named := p.fast(), p.named()
			if ok, _ := decodeBuiltin([]byte(text), named); ok {
				t.Fatalf("decodeBuiltin took the named type %T", named)
			}
			ferr, nerr := decodeResult([]byte(text), fast), decodeResult([]byte(text), named)
			fv := reflect.ValueOf(fast).Elem()
			nv := reflect.ValueOf(named).Elem().Convert(fv.Type())
			if fv.Interface() != nv.Interface() && !(fv.CanFloat() && fv.Float() != fv.Float() && nv.Float() != nv.Float()) {
				t.Errorf("%T from %q: %v, the reflect path %v", fast, text, fv, nv)
			}
			if fmt.Sprint(ferr) != strings.ReplaceAll(fmt.Sprint(nerr), "rpc."+reflect.TypeOf(named).Elem().Name(), fv.Type().String()) {
				t.Errorf("%T from %q: error %v, the reflect path %v", fast, text, ferr, nerr)
			}
			if (ferr == nil) != (nerr == nil) || ferr != nil && !errors.Is(ferr, ErrArgs) {
				t.Errorf("%T from %q: error %v, the reflect path %v", fast, text, ferr, nerr)
			}
		}
	}
}
