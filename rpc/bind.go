package rpc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// bindArg stores a request's data into dst (a pointer to the handler's
// argument) as NewLife's ApiHandler binds parameters: a JSON object binds a
// struct by field name (case-insensitively, numbers may come as strings, as
// from a query string) and a primitive or a time from its one entry; raw
// text binds a primitive or a time (parseTime's forms); bytes bind as they
// are (aliasing data: valid during the call). Empty data leaves dst at its
// zero value. The reserved keys (Token, traceparent, …; reserved.go) are
// not counted when a primitive binds from an object's one entry; keys adds
// the server's Config.MetadataKeys.
func bindArg(data []byte, keys *keySet, dst any) error {
	if len(data) == 0 {
		return nil
	}
	if d, ok := dst.(*[]byte); ok {
		*d = data
		return nil
	}
	tm, isTime := dst.(*time.Time)
	rv := reflect.ValueOf(dst).Elem()
	if !isTime && !isPrimitive(rv.Kind()) {
		if !isJSON(data) {
			return decodeResult(data, dst)
		}
		return unmarshalLenient(data, dst)
	}
	v, err := oneValue(data, keys)
	switch {
	case err != nil || len(v) == 0:
		return err // len 0: an object of reserved keys alone: no value
	case isTime:
		t, err := timeOfJSON(v)
		if err == nil {
			*tm = t
		}
		return err
	case rv.Kind() == reflect.String:
		rv.SetString(stringText(v))
		return nil
	}
	_, err = setScalar(rv, []byte(trimText(v)))
	return err
}

// oneValue is the value a primitive or a time binds from: data, or the
// one entry of a JSON object (singleEntry; nil when it has reserved keys
// alone).
func oneValue(data []byte, keys *keySet) ([]byte, error) {
	if !isJSON(data) {
		return data, nil
	}
	return singleEntry(data, keys)
}

// stringText is the string a value binds: a JSON string's text, anything
// else as it is.
func stringText(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		return trimText(v)
	}
	return string(v)
}

func isPrimitive(k reflect.Kind) bool {
	return k == reflect.String || k == reflect.Bool || (k >= reflect.Int && k <= reflect.Float64)
}

// singleEntry returns the value of a JSON object's one entry, the
// reserved keys and the server's metadata keys aside (nil when it has no
// other): how a single primitive parameter is found by name when the
// handler's parameter has none. A NewLife client's
// {"input":"x","Token":"t","TraceId":"…","traceparent":"…"} gives "x". A
// key given more than once is one entry, its last value (NewLife's
// dictionary keeps the last). It walks the object once and builds nothing.
func singleEntry(data []byte, keys *keySet) ([]byte, error) {
	var one, first []byte
	n, reserved, same := 0, 0, true
	if !eachEntry(data, true, func(k, v []byte) {
		switch {
		case keys.kind(k) != rkNone:
			reserved++
			return
		case n == 0:
			first = k
		case string(k) != string(first):
			same = false
		}
		one = v
		n++
	}) {
		return nil, notObject(data)
	}
	switch {
	case n == 0 && reserved > 0:
		return nil, nil
	case n == 0 || !same:
		return nil, fmt.Errorf("%w: a single value is expected, the object has %d entries", ErrArgs, n)
	}
	return one, nil
}

// notObject is the error of data that starts as JSON but is no object
// the binder can read: an array, or malformed (encoding/json's message;
// it checks the whole document before it decodes, so it builds nothing).
func notObject(data []byte) error {
	if data[skipSpace(data, 0)] == '[' && json.Valid(data) {
		return fmt.Errorf("%w: a single value is expected, not an array", ErrArgs)
	}
	var v struct{}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("%w: %v", ErrArgs, err)
	}
	return fmt.Errorf("%w: not a JSON object", ErrArgs)
}

// plainStringEnd returns the index of the quote that ends the JSON string
// whose contents start at b[i], or -1 when an escape or a control byte
// comes first (or no quote does). It checks eight bytes at a time: a 2000-
// byte argument was 12 % of a server's CPU per call byte by byte.
func plainStringEnd(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, e := x^('"'*ones), x^('\\'*ones)
		// A byte that is zero in q or e, or below 0x20 in x, sets its high
		// bit here (exact as a test for any; the byte loop finds which).
		if ((q-ones)&^q|(e-ones)&^e|(x-0x20*ones)&^x)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i
		case c == '\\' || c < 0x20:
			return -1
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// fieldName is the JSON name of a struct field.
func fieldName(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("json"); ok {
		if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
			return name
		}
	}
	return f.Name
}

// paramByName is the value NewLife's GetParameterValues binds to the
// parameter name from a request's data: when data is a JSON object, the
// raw value of its entry of that name in any case (nil when there is none
// or it is null: the zero value), every other entry ignored; other data
// (raw text, an array) as it is.
func paramByName(data []byte, name string) []byte {
	if i := skipSpace(data, 0); i >= len(data) || data[i] != '{' {
		return data
	}
	var found []byte
	ok := false
	if eachEntry(data, true, func(k, v []byte) {
		if !ok && foldEq(k, name) {
			found, ok = v, true
		}
	}) {
		if string(found) == "null" {
			return nil
		}
		return found
	}
	return data // malformed: the binder says what is wrong with it
}
