package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// kind is how a value was encoded, so that the HTTP gateway can render the
// same value as JSON.
type kind uint8

const (
	kindNull    kind = iota // no data block
	kindText                // a string: raw UTF-8
	kindNumber              // a number as text
	kindBool                // True/False
	kindRaw                 // bytes as they are
	kindJSON                // a JSON document
	kindTime                // a time as timeLayout text (JSON: NewLife's "yyyy-MM-ddTHH:mm:ss")
	kindTimeUTC             // a UTC time as timeLayout text (JSON: with a "Z")
)

// appendValue appends v as NewLife's JsonEncoder writes it (docs/PROTOCOL.md
// §5.2: strings raw, bools True/False, numbers as text, bytes raw, anything
// else JSON).
func appendValue(dst []byte, v any) ([]byte, kind, error) {
	switch v := v.(type) {
	case nil:
		return dst, kindNull, nil
	case string:
		return append(dst, v...), kindText, nil
	case []byte:
		if v == nil {
			return dst, kindNull, nil
		}
		return append(dst, v...), kindRaw, nil
	case bool:
		if v {
			return append(dst, "True"...), kindBool, nil
		}
		return append(dst, "False"...), kindBool, nil
	case int, int8, int16, int32, int64:
		return strconv.AppendInt(dst, reflect.ValueOf(v).Int(), 10), kindNumber, nil
	case uint, uint8, uint16, uint32, uint64:
		return strconv.AppendUint(dst, reflect.ValueOf(v).Uint(), 10), kindNumber, nil
	case float32:
		return appendFloat(dst, float64(v), 32), kindNumber, nil
	case float64:
		return appendFloat(dst, v, 64), kindNumber, nil
	case time.Time:
		if v.Location() == time.UTC {
			return v.AppendFormat(dst, timeLayout), kindTimeUTC, nil
		}
		return v.AppendFormat(dst, timeLayout), kindTime, nil
	case json.RawMessage:
		return append(dst, v...), kindJSON, nil
	case error:
		return append(dst, v.Error()...), kindText, nil
	}
	if rv := reflect.ValueOf(v); (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice) && rv.IsNil() {
		return dst, kindNull, nil
	}
	out, err := appendJSON(dst, v)
	if err != nil {
		return dst, kindNull, fmt.Errorf("rpc: encoding a %T result: %w", v, err)
	}
	return out, kindJSON, nil
}

// jsonAppender is a json.Encoder with the buffer it writes to.
type jsonAppender struct {
	b   []byte
	enc *json.Encoder
}

func (a *jsonAppender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

var jsonAppenders = sync.Pool{New: func() any {
	a := &jsonAppender{}
	a.enc = json.NewEncoder(a)
	return a
}}

// maxPooledJSON bounds the buffer a pooled encoder keeps.
const maxPooledJSON = 64 << 10

// appendJSON appends v as json.Marshal writes it, without the document
// json.Marshal would allocate for it (a 2 KB argument cost 2 KB a call).
// The encoder writes into its own pooled buffer, not into dst: dst is
// often the caller's stack array, which must not escape.
func appendJSON(dst []byte, v any) ([]byte, error) {
	a := jsonAppenders.Get().(*jsonAppender)
	a.b = a.b[:0]
	err := a.enc.Encode(v) // writes nothing on an error
	if err == nil {
		dst = append(dst, a.b[:len(a.b)-1]...) // Encode ends the document with a newline
	}
	if cap(a.b) > maxPooledJSON {
		a.b = nil
	}
	jsonAppenders.Put(a)
	return dst, err
}

// appendFloat writes a float as .NET's shortest round-trip ToString does:
// positional from 1e-4 up to 1e15, else an exponent with a sign ("1E+20",
// "1E-05").
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.AppendFloat(dst, f, 'f', -1, bits)
	}
	return strconv.AppendFloat(dst, f, 'E', -1, bits)
}

// decodeResult stores a reply's data into dst (a pointer) as NewLife's
// client decodes results: bytes as they are, text for strings and
// primitives, JSON for anything else, by dst's type; empty data (or a nil
// dst) leaves dst unchanged.
func decodeResult(data []byte, dst any) error {
	if dst == nil || len(data) == 0 {
		return nil
	}
	switch d := dst.(type) {
	case *[]byte:
		*d = append((*d)[:0], data...)
		return nil
	case *string:
		*d = string(data)
		return nil
	case *any:
		if isJSON(data) {
			return json.Unmarshal(data, d)
		}
		*d = string(data)
		return nil
	case *json.RawMessage:
		*d = append((*d)[:0], data...)
		return nil
	case *time.Time:
		t, err := parseTime(trimText(data))
		if err == nil {
			*d = t
		}
		return err
	}
	if ok, err := decodeBuiltin(data, dst); ok {
		return err
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("rpc: result must be a non-nil pointer, not %T", dst)
	}
	if v := rv.Elem(); v.Kind() == reflect.String {
		v.SetString(trimText(data))
		return nil
	}
	if ok, err := setScalar(rv.Elem(), scalarText(data)); ok {
		return err
	}
	return unmarshalLenient(data, dst)
}

// scalarText is the text a number or bool is parsed from: data without
// surrounding space and quotes, unescaped when the quotes hold escapes.
func scalarText(data []byte) []byte {
	t, escaped := unquote(data)
	if escaped {
		t = []byte(trimText(data))
	}
	return t
}

// decodeBuiltin is decodeResult's reflection-free path for a pointer to a
// bool, int, int32, int64, uint64 or float64, the usual results of a call:
// about 450 fewer instructions a call than reflect and setScalar, which it
// matches value for value and error for error (a named type, and the other
// sizes, take the reflect path). ok is false for any other dst.
func decodeBuiltin(data []byte, dst any) (ok bool, err error) {
	switch d := dst.(type) {
	case *int:
		return true, decodeInt(d, data, strconv.IntSize, "int")
	case *int32:
		return true, decodeInt(d, data, 32, "int32")
	case *int64:
		return true, decodeInt(d, data, 64, "int64")
	case *uint64:
		if n, ok := plainDecimal(data); ok && data[0] != '-' {
			*d = uint64(n)
			return true, nil
		}
		t := scalarText(data)
		*d, err = strconv.ParseUint(string(t), 10, 64)
		return true, scalarError(t, "uint64", err)
	case *float64:
		t := scalarText(data)
		*d, err = strconv.ParseFloat(string(t), 64)
		return true, scalarError(t, "float64", err)
	case *bool:
		t := scalarText(data)
		*d, err = strconv.ParseBool(string(t))
		return true, scalarError(t, "bool", err)
	}
	return false, nil
}

// decodeInt parses a scalar's text into *d as setScalar does (as the
// cases of decodeBuiltin do): the value strconv returns is stored even on an error
// (0, or the range's bound), and the error wraps ErrArgs.
func decodeInt[T int | int8 | int16 | int32 | int64](d *T, data []byte, bits int, typ string) error {
	if n, ok := plainDecimal(data); ok && n>>(bits-1) == n>>63 { // n fits in bits
		*d = T(n)
		return nil
	}
	t := scalarText(data)
	n, err := strconv.ParseInt(string(t), 10, bits)
	*d = T(n)
	return scalarError(t, typ, err)
}

// plainDecimal parses b when it is nothing but a decimal of 1 to 18
// digits, with a leading '-' or not: the text a .NET server writes for
// most numbers, parsed here without strconv's general path. ok is false for
// any other text (spaces, quotes, a sign '+', longer numbers), which the
// caller parses in full.
func plainDecimal(b []byte) (n int64, ok bool) {
	digits := b
	if len(b) > 0 && b[0] == '-' {
		digits = b[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(b) {
		n = -n
	}
	return n, true
}

// scalarError is setScalar's error for text b that failed to parse as typ
// (nil when err is nil).
func scalarError(b []byte, typ string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrArgs, parseError(b, typ, err))
}

// setScalar parses b into a bool or number value; ok is false for other
// kinds, strings included. It keeps no reference to b and, for texts of
// up to 32 bytes, allocates nothing (the conversions to string below do
// not escape): a call's int or bool result decodes without garbage. Its
// error wraps ErrArgs.
func setScalar(v reflect.Value, b []byte) (ok bool, err error) {
	if ok, err = parseScalar(v, b); err != nil {
		err = fmt.Errorf("%w: %v", ErrArgs, err)
	}
	return ok, err
}

// parseScalar is setScalar with an error that does not wrap ErrArgs (the
// lenient binder wraps it once, with the field's path). The error repeats
// at most maxEcho bytes of b.
func parseScalar(v reflect.Value, b []byte) (ok bool, err error) {
	switch v.Kind() {
	case reflect.Bool:
		var x bool
		x, err = strconv.ParseBool(string(b))
		v.SetBool(x)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		n, err = strconv.ParseInt(string(b), 10, v.Type().Bits())
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		n, err = strconv.ParseUint(string(b), 10, v.Type().Bits())
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		var f float64
		f, err = strconv.ParseFloat(string(b), v.Type().Bits())
		v.SetFloat(f)
	default:
		return false, nil
	}
	if err != nil {
		return true, parseError(b, v.Type().String(), err)
	}
	return true, nil
}

// parseError is parseScalar's error for text b that failed to parse as
// typ. It repeats at most maxEcho bytes of b.
func parseError(b []byte, typ string, err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = ne.Err // its text repeats all of b
	}
	return fmt.Errorf("%q as %s: %v", clip(string(b)), typ, err)
}

// unquote returns b without surrounding space and, when no escape is
// inside, without its JSON quotes; escaped reports quotes around escapes,
// which trimText undoes.
func unquote(b []byte) (t []byte, escaped bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return b, false
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		return b, true
	}
	return b[1 : len(b)-1], false
}

// trimText is a value's text without surrounding space and JSON quotes (a
// NewLife client trims quotes from texts too).
func trimText(b []byte) string {
	t, escaped := unquote(b)
	if escaped {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
		t = t[1 : len(t)-1]
	}
	return string(t)
}

// isJSON reports whether data, trimmed, starts a JSON object or array (the
// server's test for "parse the arguments as JSON").
func isJSON(data []byte) bool {
	i := skipSpace(data, 0)
	return i < len(data) && (data[i] == '{' || data[i] == '[')
}
