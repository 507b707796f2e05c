package rpc

import (
	"encoding/json"
	"fmt"
	"sort"
)

// AppendRequest appends the body of a call of action with args to dst, as
// Client.Invoke encodes it (without a token or headers): what Server.Process
// takes, and the payload of an SRMP request (flag FlagRPC).
func AppendRequest(dst []byte, action string, args any) ([]byte, error) {
	out, _, err := appendRequest(dst, action, args, "", nil)
	return out, err
}

// appendRequest appends the body of a call of action with args: the name,
// then the arguments as NewLife's ApiClient encodes them (nil: none; bytes
// and strings raw; primitives as text; anything else JSON, into which the
// token and headers are merged as keys, as NewLife merges them into the
// argument object). Where NewLife sends nothing (nil args), a token makes
// the data an object of the token alone: NewLife's server reads it into
// the session, and its actions without parameters ignore it, as a lifenet
// server does. carried reports whether the token travels in the body (it
// cannot in a bare value, bytes or an array).
func appendRequest(dst []byte, action string, args any, token string, headers map[string]string) (out []byte, carried bool, err error) {
	if len(action) == 0 || len(action) > MaxActionLen || !validAction([]byte(action)) {
		return dst, false, fmt.Errorf("%w: action %q (1 to %d ASCII bytes)", ErrSignature, action, MaxActionLen)
	}
	dst = appendName(dst, action)
	if args == nil {
		headers = nil // NewLife merges them into an argument object only
	}
	if args == nil && token == "" {
		return dst, false, nil
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
	if k == kindJSON && (token != "" || len(headers) > 0) {
		out, carried = mergeKeys(out, off+4, token, headers)
	}
	if args == nil && !carried {
		return out[:off], false, nil
	}
	patchDataLen(out, off)
	return out, carried && token != "", nil
}

// mergeKeys adds Token and the headers (sorted by key) to the JSON object
// that starts at b[from:], when it is one (ok); a nil argument merges the
// token alone.
func mergeKeys(b []byte, from int, token string, headers map[string]string) (out []byte, ok bool) {
	obj := b[from:]
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return b, false
	}
	b = b[:len(b)-1]
	empty := len(obj) == 2
	add := func(k, v string) {
		if !empty {
			b = append(b, ',')
		}
		empty = false
		b = append(appendJSONText(b, k), ':')
		b = appendJSONText(b, v)
	}
	if token != "" {
		add(tokenKey, token)
	}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(k, headers[k])
	}
	return append(b, '}'), true
}

// appendJSONText appends s as a JSON string: as it is between quotes when
// it is printable ASCII without quotes or backslashes (a token, a header
// name), else as encoding/json writes it.
func appendJSONText(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
