package rpc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// AppendRequest appends the body of a call of action with args to dst, as
// Client.Invoke encodes it (without a token or headers): what Server.Process
// takes, and the payload of an SRMP request (flag FlagRPC).
func AppendRequest(dst []byte, action string, args any) ([]byte, error) {
	out, _, err := appendRequest(dst, action, args, "", nil, nil)
	return out, err
}

// appendRequest appends the body of a call of action with args: the name,
// then the arguments as NewLife's ApiClient encodes them (nil: none; bytes
// and strings raw; primitives as text; anything else JSON, into which the
// token, the headers and x, the call's metadata, remaining time and trace
// context, are merged as keys, as NewLife merges them into the argument
// object). Where NewLife sends nothing (nil args), a token, metadata or a
// remaining time make the data an object of them (without the headers, as
// NewLife's): NewLife's server reads a token into the session, and its
// actions without parameters ignore the object, as a lifenet server does.
// carried reports whether the token travels in the body (it cannot in a
// bare value, bytes or an array).
func appendRequest(dst []byte, action string, args any, token string, headers map[string]string, x *extras) (out []byte, carried bool, err error) {
	if len(action) == 0 || len(action) > MaxActionLen || !validAction([]byte(action)) {
		return dst, false, fmt.Errorf("%w: action %q (1 to %d ASCII bytes)", ErrSignature, action, MaxActionLen)
	}
	dst = appendName(dst, action)
	if args == nil {
		headers = nil // NewLife merges them into an argument object only
		if token == "" && !x.makesObject() {
			return dst, false, nil
		}
	}
	off := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	k := kindJSON
	if args == nil {
		out = append(dst, "{}"...)
	} else if out, k, err = appendValue(dst, args); err != nil {
		return dst[:off], false, err
	}
	if k == kindNull {
		return out[:off], false, nil
	}
	merged := false
	if k == kindJSON && (token != "" || len(headers) > 0 || x != nil) {
		out, merged = mergeKeys(out, off+4, token, headers, x)
	}
	if args == nil && !merged {
		return out[:off], false, nil
	}
	patchDataLen(out, off)
	return out, merged && token != "", nil
}

// extras is what a client's call carries besides its arguments, token
// and headers: its context's metadata and trace context, and its
// remaining time (ClientConfig.SendTimeout). A nil *extras carries none.
type extras struct {
	md      *outgoing
	trace   *TraceContext
	timeout int64 // ms; 0: not sent
}

// makesObject reports whether x makes an object of a call without
// arguments: metadata or a remaining time do (a trace context alone does
// not, as NewLife's tracer attaches to argument objects only).
func (x *extras) makesObject() bool { return x != nil && (x.md != nil || x.timeout > 0) }

// mergeKeys adds Token, the headers (sorted by key), x's metadata (in
// order), Timeout-Ms and traceparent to the JSON object that starts at
// b[from:], when it is one (ok), leaving out a key the object has already
// in any case (NewLife's client adds a key only if !dic.ContainsKey).
func mergeKeys(b []byte, from int, token string, headers map[string]string, x *extras) (out []byte, ok bool) {
	obj := b[from:]
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return b, false
	}
	// A key is fresh when neither the object (read with nextEntry: slices
	// of b given to a function or kept here would make a caller's stack
	// buffer escape) nor the keys added have it.
	var put [16]string
	added, end := put[:0], len(b)
	fresh := func(k string) bool {
		for _, a := range added {
			if strings.EqualFold(a, k) {
				return false
			}
		}
		o := b[from:end]
		for i, st := openObject(o); st == entryMore; {
			var ks, ke int
			ks, ke, _, _, i, st = nextEntry(o, i, false)
			if st != entryBad && foldEq(o[ks:ke], k) {
				return false
			}
		}
		return true
	}
	b = b[:len(b)-1]
	empty := len(obj) == 2
	key := func(k string) bool {
		if !fresh(k) {
			return false
		}
		added = append(added, k)
		if !empty {
			b = append(b, ',')
		}
		empty = false
		b = append(appendJSONText(b, k), ':')
		return true
	}
	if token != "" && key(keyToken) {
		b = appendJSONText(b, token)
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if key(k) {
			b = appendJSONText(b, headers[k])
		}
	}
	if x != nil {
		if x.md != nil {
			for i := 0; i < len(x.md.kv); i += 2 {
				if key(x.md.kv[i]) {
					b = appendJSONText(b, x.md.kv[i+1])
				}
			}
		}
		if x.timeout > 0 && key(keyTimeout) {
			b = strconv.AppendInt(b, x.timeout, 10)
		}
		if x.trace != nil && key(keyTraceparent) {
			if plainJSON(x.trace.TraceID) && plainJSON(x.trace.SpanID) {
				b = append(appendTraceparent(append(b, '"'), *x.trace), '"')
			} else {
				b = appendJSONText(b, x.trace.String())
			}
		}
	}
	return append(b, '}'), true
}

// plainJSON reports whether s goes in a JSON string as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendJSONText appends s as a JSON string: as it is between quotes when
// it is printable ASCII without quotes or backslashes (a token, a header
// name), else as encoding/json writes it.
func appendJSONText(dst []byte, s string) []byte {
	if !plainJSON(s) {
		b, _ := json.Marshal(s)
		return append(dst, b...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
