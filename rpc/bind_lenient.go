package rpc

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// maxBindDepth bounds how deep the lenient binder follows nested values
// (each level is a call on the reading goroutine's stack).
const maxBindDepth = 256

// unmarshalLenient is json.Unmarshal (field names match case-insensitively)
// that, where encoding/json refuses a value, binds it as NewLife's JSON
// reader does: numbers and booleans written as strings, and times in
// NewLife's forms (parseTime; "2026-08-02T01:01:05" has no zone, which
// encoding/json refuses) or as Unix numbers, at any depth (struct fields,
// pointers, slices, arrays and maps with string keys). Malformed JSON is
// encoding/json's error. Values encoding/json set before it failed are
// set again; fields no key names keep what they held.
func unmarshalLenient(data []byte, dst any) error {
	err := json.Unmarshal(data, dst)
	var se *json.SyntaxError
	if err != nil && !errors.As(err, &se) {
		err = bindLenient(data, reflect.ValueOf(dst).Elem(), 0)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrArgs, err)
	}
	return nil
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// bindLenient stores the valid JSON value raw into v (addressable).
func bindLenient(raw []byte, v reflect.Value, depth int) error {
	if depth > maxBindDepth {
		return fmt.Errorf("nested deeper than %d", maxBindDepth)
	}
	raw = raw[skipSpace(raw, 0):]
	if string(raw) == "null" {
		return nil // as encoding/json: null leaves the value
	}
	t := v.Type()
	if t == timeType {
		tm, err := timeOfJSON(raw)
		if err == nil {
			v.Set(reflect.ValueOf(tm))
		}
		return err
	}
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
		return json.Unmarshal(raw, v.Addr().Interface())
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return bindLenient(raw, v.Elem(), depth+1)
	case reflect.Struct:
		if raw[0] == '{' {
			return bindStruct(raw, v, depth)
		}
	case reflect.Slice, reflect.Array:
		if raw[0] == '[' && t.Elem().Kind() != reflect.Uint8 {
			return bindList(raw, v, depth)
		}
	case reflect.Map:
		if raw[0] == '{' && t.Key().Kind() == reflect.String {
			return bindMap(raw, v, depth)
		}
	}
	if raw[0] == '"' && isPrimitive(t.Kind()) && t.Kind() != reflect.String {
		_, err := parseScalar(v, []byte(trimText(raw)))
		return err
	}
	return json.Unmarshal(raw, v.Addr().Interface())
}

// bindStruct binds the JSON object raw to the struct v field by field.
func bindStruct(raw []byte, v reflect.Value, depth int) error {
	fields := structFields(v.Type())
	var err error
	eachEntry(raw, false, func(k, val []byte) {
		if err != nil {
			return
		}
		f := fields.match(k)
		if f == nil {
			return // as NewLife: a key that names no field is ignored
		}
		fv, ferr := fieldByIndex(v, f.index)
		if ferr == nil {
			ferr = bindLenient(val, fv, depth+1)
		}
		if ferr != nil {
			err = fmt.Errorf("field %s: %w", f.name, ferr)
		}
	})
	return err
}

// bindList binds the JSON array raw to the slice or array v element by
// element (a slice gets as many as the array has; an array's others are
// zero, as encoding/json does).
func bindList(raw []byte, v reflect.Value, depth int) error {
	isSlice := v.Kind() == reflect.Slice
	if isSlice {
		v.SetLen(0)
	}
	n := 0
	var err error
	eachElement(raw, func(val []byte) {
		if err != nil {
			return
		}
		var e reflect.Value
		switch {
		case isSlice:
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			e = v.Index(n)
		case n < v.Len():
			e = v.Index(n)
		default:
			n++
			return // as encoding/json: past an array's length, ignored
		}
		if ferr := bindLenient(val, e, depth+1); ferr != nil {
			err = fmt.Errorf("element %d: %w", n, ferr)
		}
		n++
	})
	for i := n; !isSlice && i < v.Len(); i++ {
		v.Index(i).SetZero()
	}
	return err
}

// bindMap binds the JSON object raw to the map v (string keys) entry by
// entry.
func bindMap(raw []byte, v reflect.Value, depth int) error {
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	var err error
	eachEntry(raw, false, func(k, val []byte) {
		if err != nil {
			return
		}
		e := reflect.New(t.Elem()).Elem()
		if ferr := bindLenient(val, e, depth+1); ferr != nil {
			err = fmt.Errorf("key %q: %w", clip(string(k)), ferr)
			return
		}
		v.SetMapIndex(reflect.ValueOf(string(k)).Convert(t.Key()), e)
	})
	return err
}

// eachElement calls f with each element of the JSON array raw (valid:
// encoding/json read it before).
func eachElement(raw []byte, f func(val []byte)) {
	i := skipSpace(raw, 1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValue(raw, i, false)
		if end < 0 {
			return
		}
		f(raw[i:end])
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
}

// fieldByIndex is v's field at index (a promoted field's path), allocating
// the embedded pointers on the way.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return v, errors.New("an embedded pointer to an unexported struct")
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

// field is a struct field the binder sets: its JSON name and index path.
type field struct {
	name  string
	index []int
}

type fieldList []field

// match finds the field a key names as encoding/json does: its exact
// name, else the first whose name matches in any case.
func (fs fieldList) match(k []byte) *field {
	for i := range fs {
		if fs[i].name == string(k) {
			return &fs[i]
		}
	}
	for i := range fs {
		if foldEq(k, fs[i].name) {
			return &fs[i]
		}
	}
	return nil
}

var fieldCache sync.Map // reflect.Type -> fieldList

// structFields lists the fields of t a JSON object binds: exported ones
// (promoted ones of embedded structs included), by their json tag's name
// or their own, "-" left out.
func structFields(t reflect.Type) fieldList {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(fieldList)
	}
	var fs fieldList
	for _, f := range reflect.VisibleFields(t) {
		tag, tagged := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		embedded := f.Anonymous && !tagged && (f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct)
		if name == "-" || !f.IsExported() || embedded {
			continue // an embedded struct's fields are promoted: VisibleFields lists them
		}
		if name == "" {
			name = f.Name
		}
		fs = append(fs, field{name: name, index: f.Index})
	}
	fieldCache.Store(t, fs)
	return fs
}
