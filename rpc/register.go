package rpc

import (
	"context"
	"fmt"
	"reflect"
	"strings"
)

// RegisterOption adjusts how Register names a controller's actions.
type RegisterOption func(*registration)

// registration is what Register's options set (its maps made by Register).
type registration struct {
	prefix string
	names  map[string]string
	params map[string][]string
}

// WithParam declares the names of method's parameters (Go keeps none), as
// WithParams does for Handle: a method whose one argument is a primitive
// binds it by that name from an argument object, case-insensitively,
// ignoring other keys (NewLife's binding).
func WithParam(method string, names ...string) RegisterOption {
	return func(r *registration) { r.params[method] = append([]string(nil), names...) }
}

// WithPrefix replaces the controller part of the action names (NewLife [Api("X")]
// on the class).
func WithPrefix(p string) RegisterOption { return func(r *registration) { r.prefix = p } }

// WithName gives method the action name name (NewLife [Api("Y")] on the
// method): a name with a "/" is used as it is, else it replaces the method
// part.
func WithName(method, name string) RegisterOption {
	return func(r *registration) { r.names[method] = name }
}

var (
	ctxType = reflect.TypeFor[context.Context]()
	errType = reflect.TypeFor[error]()
)

// Register makes the exported methods of controller actions named
// "{Type}/{Method}", where Type is controller's type name without a
// "Controller" or "Service" suffix (NewLife's naming); see Prefix and Name.
//
// A method takes an optional context.Context (cancelled when the caller's
// connection ends; SessionFrom finds the caller) and at most one argument,
// and returns a result, an error, both, or nothing. Go keeps no parameter
// names, so several NewLife parameters become the fields of one struct
// argument: a JSON object binds to it by field name, case-insensitively
// (numbers may come as strings). As in NewLife, a key that names no field
// is ignored (NewLife clients add Token, traceparent and TraceId) and a
// field that no key names keeps its zero value: a handler that needs a
// field checks it and returns ErrArgs (wrapped, with what is missing). A primitive argument binds from raw text
// or from a one-entry object; a []byte argument gets the raw data. Register
// fails with ErrSignature naming the first method it cannot serve, and
// registers nothing then.
func (s *Server) Register(controller any, opts ...RegisterOption) error {
	rv := reflect.ValueOf(controller)
	t := rv.Type()
	reg := registration{prefix: controllerName(t), names: map[string]string{}, params: map[string][]string{}}
	for _, o := range opts {
		o(&reg)
	}
	var acts []*action
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		a, err := methodAction(rv.Method(i), m.Name, reg, s.keys)
		if err != nil {
			return err
		}
		acts = append(acts, a)
	}
	if len(acts) == 0 {
		return fmt.Errorf("%w: %s has no exported methods", ErrSignature, t)
	}
	return s.reg.add(acts...)
}

// controllerName is a type's name without "Controller"/"Service".
func controllerName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := t.Name()
	for _, suffix := range []string{"Controller", "Service"} {
		if strings.HasSuffix(n, suffix) && len(n) > len(suffix) {
			return n[:len(n)-len(suffix)]
		}
	}
	return n
}

// methodAction builds the action of one method.
func methodAction(fn reflect.Value, method string, reg registration, keys *keySet) (*action, error) {
	ft := fn.Type()
	in := 0
	withCtx := ft.NumIn() > 0 && ft.In(0) == ctxType
	if withCtx {
		in = 1
	}
	if ft.NumIn()-in > 1 || ft.IsVariadic() {
		return nil, fmt.Errorf("%w: %s takes %d arguments; put them in one struct", ErrSignature, method, ft.NumIn()-in)
	}
	var argType reflect.Type
	if ft.NumIn() > in {
		argType = ft.In(in)
	}
	withErr := ft.NumOut() > 0 && ft.Out(ft.NumOut()-1) == errType
	results := ft.NumOut()
	if withErr {
		results--
	}
	if results > 1 {
		return nil, fmt.Errorf("%w: %s returns %d values; return (T, error)", ErrSignature, method, ft.NumOut())
	}
	name := method
	if n, ok := reg.names[method]; ok {
		name = n
	}
	if !strings.Contains(name, "/") {
		name = reg.prefix + "/" + name
	}
	var ret reflect.Type
	if results == 1 {
		ret = ft.Out(0)
	}
	a := &action{name: name, params: reg.params[method]}
	a.typed(argType, ret, func(ctx context.Context, data, dst []byte) ([]byte, kind, error) {
		args := make([]reflect.Value, 0, 2)
		if withCtx {
			args = append(args, reflect.ValueOf(ctx))
		}
		if argType != nil {
			p := reflect.New(argType)
			if err := bindArg(data, keys, p.Interface()); err != nil {
				return dst, kindNull, err
			}
			args = append(args, p.Elem())
		}
		out := fn.Call(args)
		if withErr {
			if e := out[len(out)-1]; !e.IsNil() {
				return dst, kindNull, e.Interface().(error)
			}
		}
		if results == 0 {
			return dst, kindNull, nil
		}
		return appendValue(dst, out[0].Interface())
	})
	return a, nil
}
