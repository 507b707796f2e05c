package rpc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// bindArg stores a request's data into dst (a pointer to the handler's
// argument) as NewLife's ApiHandler binds parameters: a JSON object binds a
// struct by field name (case-insensitively, numbers may come as strings, as
// from a query string) and a primitive from its one entry; raw text binds a
// primitive; bytes bind as they are (aliasing data: valid during the call).
// Empty data leaves dst at its zero value. The reserved keys (Token,
// traceparent, …; reserved.go) are not counted when a primitive binds
// from an object's one entry; keys adds the server's Config.MetadataKeys.
func bindArg(data []byte, dst any) error { return bindArgKeys(data, nil, dst) }

func bindArgKeys(data []byte, keys *keySet, dst any) error {
	if len(data) == 0 {
		return nil
	}
	if d, ok := dst.(*[]byte); ok {
		*d = data
		return nil
	}
	rv := reflect.ValueOf(dst).Elem()
	if isPrimitive(rv.Kind()) {
		if isJSON(data) {
			one, err := singleEntry(data, keys)
			if err != nil {
				return err
			}
			data = one
		}
		if len(data) == 0 {
			return nil // an object of reserved keys alone: no value
		}
		text := string(data)
		if rv.Kind() != reflect.String {
			text = trimText(data)
		} else if len(data) > 0 && data[0] == '"' {
			text = trimText(data)
		}
		_, err := setPrimitive(rv, text)
		return err
	}
	if !isJSON(data) {
		return decodeText(data, dst)
	}
	return unmarshalLenient(data, dst)
}

// bindString binds a string parameter as bindArg does.
func bindString(data []byte) (string, error) { return bindStringKeys(data, nil) }

func bindStringKeys(data []byte, keys *keySet) (string, error) {
	if isJSON(data) {
		one, err := singleEntry(data, keys)
		if err != nil {
			return "", err
		}
		return trimText(one), nil
	}
	if data[0] == '"' {
		return trimText(data), nil
	}
	return string(data), nil
}

func isPrimitive(k reflect.Kind) bool {
	return k == reflect.String || k == reflect.Bool || (k >= reflect.Int && k <= reflect.Float64)
}

// singleEntry returns the value of a JSON object's one entry, the
// reserved keys and the server's metadata keys aside (nil when it has no
// other): how a single primitive parameter is found by name when the
// handler's parameter has none. A NewLife client's
// {"input":"x","Token":"t","TraceId":"…","traceparent":"…"} gives "x".
func singleEntry(data []byte, keys *keySet) ([]byte, error) {
	if v, ok := simpleEntry(data); ok && (keys == nil || keys.kind(simpleKey(data)) == rkNone) {
		return v, nil
	}
	var one []byte
	n, reserved := 0, 0
	if eachEntry(data, true, func(k, v []byte) {
		if keys.kind(k) == rkNone {
			one = v
			n++
		} else {
			reserved++
		}
	}) {
		switch {
		case n == 1: // several entries, one of them the value: no map, no allocation
			return one, nil
		case n == 0 && reserved > 0:
			return nil, nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrArgs, err)
	}
	one, n, reserved = nil, 0, 0
	for k, v := range m {
		if keys.kind([]byte(k)) != rkNone {
			reserved++
			continue
		}
		one = v
		n++
	}
	switch {
	case n == 0 && reserved > 0:
		return nil, nil
	case n != 1:
		return nil, fmt.Errorf("%w: a single value is expected, the object has %d entries", ErrArgs, n)
	}
	return one, nil
}

// simpleEntry is singleEntry's fast path for the common object of one
// entry whose key has no escapes and is not reserved: {"input":"x"} or
// {"a":42}. It returns the value's bytes (a string with its quotes); ok is
// false whenever the object is anything else, and the full parser decides.
func simpleEntry(b []byte) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	k := i + 1
	for k < len(b) && b[k] != '"' && b[k] != '\\' && b[k] >= 0x20 {
		k++
	}
	if k >= len(b) || b[k] != '"' || reservedKind(b[i+1:k]) != rkNone {
		return nil, false
	}
	i = skipSpace(b, k+1)
	if i >= len(b) || b[i] != ':' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	start := i
	if i < len(b) && b[i] == '"' {
		end := plainStringEnd(b, i+1)
		if end < 0 {
			return nil, false // escapes and control bytes: the full parser
		}
		i = end + 1
	} else {
		for i < len(b) && (b[i] == '-' || b[i] == '+' || b[i] == '.' || (b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'z') || b[i] == 'E') {
			i++
		}
		if i == start || !json.Valid(b[start:i]) {
			return nil, false
		}
	}
	end := i
	i = skipSpace(b, i)
	if i != len(b)-1 || b[i] != '}' {
		return nil, false
	}
	return b[start:end], true
}

// simpleKey is the key of an object simpleEntry took.
func simpleKey(b []byte) []byte {
	i := skipSpace(b, skipSpace(b, 0)+1) + 1
	return b[i:plainStringEnd(b, i)]
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

// unmarshalLenient is json.Unmarshal (field names match case-insensitively)
// that, for a struct, also takes numbers and booleans written as strings.
func unmarshalLenient(data []byte, dst any) error {
	err := json.Unmarshal(data, dst)
	var te *json.UnmarshalTypeError
	if err == nil {
		return nil
	}
	rv := reflect.ValueOf(dst).Elem()
	if !errors.As(err, &te) || rv.Kind() != reflect.Struct {
		return fmt.Errorf("%w: %v", ErrArgs, err)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return fmt.Errorf("%w: %v", ErrArgs, err)
	}
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		raw, ok := lookupFold(m, fieldName(f))
		if !ok {
			continue
		}
		fv := rv.Field(i)
		if len(raw) > 0 && raw[0] == '"' && isPrimitive(fv.Kind()) && fv.Kind() != reflect.String {
			if _, err := setPrimitive(fv, trimText(raw)); err != nil {
				return err
			}
			continue
		}
		if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
			return fmt.Errorf("%w: field %s: %v", ErrArgs, f.Name, err)
		}
	}
	return nil
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

func lookupFold(m map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
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
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data // the binder says what is wrong with it
	}
	v, _ := lookupFold(m, name)
	if string(v) == "null" {
		return nil
	}
	return v
}
