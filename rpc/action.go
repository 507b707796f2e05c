package rpc

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// invoker runs one call of an action: it binds data (borrowed: valid during
// the call) to the action's parameter, calls it, and appends the encoded
// result to dst.
type invoker func(ctx context.Context, data, dst []byte) ([]byte, kind, error)

// action is one registered action.
type action struct {
	name    string
	id      uint32 // its order of registration (a session's callCache slot)
	invoke  invoker
	sig     string   // for Api/All: "Result Name(Param)"
	inline  bool     // runs on the connection's reading goroutine (Inline)
	builtin bool     // one of the server's own actions (Api/All, Api/Info): Authorize does not apply
	open    bool     // never authorized, even with AuthorizeBuiltins (Api/Health)
	params  []string // the parameter names declared (WithParams, WithParam): a primitive binds by name
	raw     bool     // its one argument is []byte (NewLife's IPacket): over HTTP it gets the body as it is
	fields  bool     // its one argument binds by key (a struct with fields, a map): reserved keys bind too
	stream  streamer
}

var bytesType = reflect.TypeFor[[]byte]()

// bindsFields reports whether an argument of type t binds an object's
// entries by key: a struct with fields or a map, through any pointers.
func bindsFields(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return false
	case t.Kind() == reflect.Struct:
		return t.NumField() > 0
	}
	return t.Kind() == reflect.Map
}

// HandleOption adjusts an action registered with Handle.
type HandleOption func(*action)

// WithInline runs the action on the reading goroutine of the caller's
// connection instead of a goroutine of its own, and its reply joins the
// replies to the other requests of the same read in one write: the fastest
// form, for handlers that never block (no I/O, no waiting on locks or
// channels). While an inline handler runs, its connection reads nothing
// more; other connections are not affected, but for UDP peers, which
// share their listener's one reading goroutine, all peers wait.
func WithInline() HandleOption { return func(a *action) { a.inline = true } }

// WithParams declares the names of the action's parameters, which Go
// functions do not carry (NewLife binds by them). An action whose one
// argument is a primitive (string, number, bool) and that has a name binds
// it as NewLife's GetParameterValues does: from the argument object's entry
// of that name, found case-insensitively; other keys (Token, traceparent,
// anything else) are ignored and a missing key leaves the zero value; raw
// text (not an object) binds as it is. A reserved key may be the name: a
// parameter named "Token" binds the token, which the session takes too.
// Without names a primitive binds from an object's one entry, the
// reserved keys aside. A struct argument binds by its field names either
// way.
func WithParams(names ...string) HandleOption {
	return func(a *action) { a.params = append([]string(nil), names...) }
}

// registry maps action names to actions. Lookups read an immutable snapshot
// without a lock; registration copies it.
type registry struct {
	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[actions]
	ids  uint32 // actions registered so far (mu)
}

type actions struct {
	exact map[string]*action // by the registered name
	fold  map[string]*action // by the ASCII-lower-cased name
}

// add registers acts, all or none; each name is checked and must be new
// (in any case), or a built-in's, which it replaces.
func (r *registry) add(acts ...*action) error {
	for _, a := range acts {
		if a.name == "" || len(a.name) > MaxActionLen || !validAction([]byte(a.name)) {
			return fmt.Errorf("%w: name %q (1 to %d ASCII bytes)", ErrSignature, a.name, MaxActionLen)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	next := &actions{exact: map[string]*action{}, fold: map[string]*action{}}
	if old != nil {
		next.exact, next.fold = maps.Clone(old.exact), maps.Clone(old.fold)
	}
	for _, a := range acts {
		low := strings.ToLower(a.name)
		if old, dup := next.fold[low]; dup {
			if !old.builtin || a.builtin {
				return fmt.Errorf("%w: %s", ErrDuplicate, a.name)
			}
			delete(next.exact, old.name) // the application's action replaces a built-in
		}
		next.exact[a.name], next.fold[low] = a, a
	}
	for _, a := range acts {
		a.id = r.ids
		r.ids++
	}
	r.snap.Store(next)
	return nil
}

// find looks an action up as NewLife does: the exact name, then in any
// case, then "{Controller}/*", then "*". It allocates nothing.
func (r *registry) find(name []byte) *action {
	s := r.snap.Load()
	if s == nil {
		return nil
	}
	if a := s.exact[string(name)]; a != nil {
		return a
	}
	var buf [MaxActionLen + 2]byte
	if len(name) > MaxActionLen {
		return s.fold["*"]
	}
	low := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	if a := s.fold[string(low)]; a != nil {
		return a
	}
	if i := strings.IndexByte(string(low), '/'); i >= 0 {
		if a := s.fold[string(append(low[:i+1], '*'))]; a != nil {
			return a
		}
	}
	return s.fold["*"]
}

// all lists the registered actions' signatures, sorted by name.
func (r *registry) all() []string {
	s := r.snap.Load()
	if s == nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(s.exact))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.exact[n].sig
	}
	return out
}

// Handle registers fn as the action name: the typed, reflection-free form
// for hot actions. The argument binds from the request's data (see
// Server.Register for the rules): a struct from a JSON object by field name,
// a primitive from raw text or a one-entry object, []byte as the raw data
// (borrowed: valid until fn returns). The result is encoded as NewLife
// does: strings raw, numbers as text, bools True/False, []byte raw, other
// types as JSON; a nil pointer, slice or map is a null result. Use
// struct{} for an action without arguments.
func Handle[A, R any](s *Server, name string, fn func(ctx context.Context, args A) (R, error), opts ...HandleOption) error {
	a := &action{name: name}
	for _, o := range opts {
		o(a)
	}
	a.typed(reflect.TypeFor[A](), reflect.TypeFor[R](), typedInvoker(fn, s.keys))
	return s.reg.add(a)
}

// typedInvoker adapts a typed handler to an invoker. A []byte argument is
// the data itself (no binding, nothing allocated). keys are the server's
// metadata keys, which binding skips.
func typedInvoker[A, R any](fn func(context.Context, A) (R, error), keys *keySet) invoker {
	if raw, ok := any(fn).(func(context.Context, []byte) (R, error)); ok {
		return func(ctx context.Context, data, dst []byte) ([]byte, kind, error) {
			r, err := raw(ctx, data)
			if err != nil {
				return dst, kindNull, err
			}
			return appendResult(dst, r)
		}
	}
	if str, ok := any(fn).(func(context.Context, string) (R, error)); ok {
		return func(ctx context.Context, data, dst []byte) ([]byte, kind, error) {
			v, err := oneValue(data, keys) // bound here, not through reflection: nothing escapes
			if err != nil {
				return dst, kindNull, err
			}
			r, err := str(ctx, stringText(v))
			if err != nil {
				return dst, kindNull, err
			}
			return appendResult(dst, r)
		}
	}
	return func(ctx context.Context, data, dst []byte) ([]byte, kind, error) {
		var a A
		if len(data) > 0 {
			if err := bindArg(data, keys, &a); err != nil {
				return dst, kindNull, err
			}
		}
		r, err := fn(ctx, a)
		if err != nil {
			return dst, kindNull, err
		}
		return appendResult(dst, r)
	}
}

// appendResult encodes a typed result; the common primitive results are
// encoded without boxing them.
func appendResult[R any](dst []byte, r R) ([]byte, kind, error) {
	switch v := any(r).(type) {
	case string:
		return append(dst, v...), kindText, nil
	case []byte:
		if v == nil {
			return dst, kindNull, nil
		}
		return append(dst, v...), kindRaw, nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), kindNumber, nil
	case int64:
		return strconv.AppendInt(dst, v, 10), kindNumber, nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), kindNumber, nil
	case struct{}:
		return dst, kindNull, nil
	}
	return appendValue(dst, any(r))
}

// sigOf is an action's line in Api/All in NewLife's form (its
// ApiController.All): "{ReturnType} {action}({ParamType} {name}, …)" with
// .NET's type names (netTypeName). A struct argument lists its fields, the
// parameters it stands for; a primitive is named by WithParams/WithParam
// ("value" without a name); none (nil or struct{}) gives "()". No result
// (nil or struct{}) is "Void".
func sigOf(name string, ret, arg reflect.Type, params []string) string {
	var b strings.Builder
	if ret == nil || ret.Kind() == reflect.Struct && ret.NumField() == 0 {
		b.WriteString("Void")
	} else {
		b.WriteString(netTypeName(ret))
	}
	b.WriteString(" " + name + "(")
	switch {
	case arg == nil || arg.Kind() == reflect.Struct && arg.NumField() == 0:
	case arg.Kind() == reflect.Struct && arg != timeType:
		n := 0
		for i := range arg.NumField() {
			f := arg.Field(i)
			if !f.IsExported() {
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			b.WriteString(netTypeName(f.Type) + " " + fieldName(f))
		}
	default:
		p := "value"
		if len(params) > 0 {
			p = params[0]
		}
		b.WriteString(netTypeName(arg) + " " + p)
	}
	b.WriteString(")")
	return b.String()
}

var timeType = reflect.TypeFor[time.Time]()

// netKindNames are the .NET names of the primitive kinds (the array has
// a place for every kind: t.Kind() indexes it).
var netKindNames = [...]string{reflect.String: "String", reflect.Bool: "Boolean", reflect.Int8: "SByte",
	reflect.Int16: "Int16", reflect.Int32: "Int32", reflect.Int: "Int64", reflect.Int64: "Int64",
	reflect.Uint8: "Byte", reflect.Uint16: "UInt16", reflect.Uint32: "UInt32", reflect.Uint: "UInt64",
	reflect.Uint64: "UInt64", reflect.Uintptr: "UInt64", reflect.Float32: "Single", reflect.Float64: "Double",
	reflect.UnsafePointer: ""}

// netTypeName is the .NET Type.Name NewLife would print for a Go type:
// String, Int32, Int64 (int too), Boolean, Double, Single, Byte, DateTime,
// TimeSpan, IPacket for []byte (the raw data, NewLife's packet
// parameter), T[] for other slices and arrays, Object for interfaces and
// maps (NewLife's Object results), a struct's or named type's own name.
func netTypeName(t reflect.Type) string {
	if t == nil {
		return "Object"
	}
	switch t {
	case timeType:
		return "DateTime"
	case reflect.TypeFor[time.Duration]():
		return "TimeSpan"
	}
	if n := netKindNames[t.Kind()]; n != "" {
		return n
	}
	switch t.Kind() {
	case reflect.Pointer:
		return netTypeName(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "IPacket"
		}
		return netTypeName(t.Elem()) + "[]"
	case reflect.Struct:
		if t.Name() != "" {
			return t.Name()
		}
	}
	return "Object"
}

// typed fills in what a's argument type arg and result type ret tell
// (its line in Api/All, how its argument binds) and its invoker inv. An
// action whose one parameter is a primitive or a time (what NewLife binds
// as a base type: its TypeCode is not Object) named by WithParams or
// WithParam binds it from that entry of an argument object (paramByName).
func (a *action) typed(arg, ret reflect.Type, inv invoker) {
	a.sig = sigOf(a.name, ret, arg, a.params)
	a.raw, a.fields, a.invoke = arg == bytesType, bindsFields(arg), inv
	if len(a.params) > 0 && arg != nil && (isPrimitive(arg.Kind()) || arg == timeType) && inv != nil {
		name := a.params[0]
		a.invoke = func(ctx context.Context, data, dst []byte) ([]byte, kind, error) {
			return inv(ctx, paramByName(data, name), dst)
		}
	}
}
