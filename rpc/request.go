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
	return appendRequest(dst, action, args, "", nil)
}

// appendRequest appends the body of a call of action with args: the name,
// then the arguments as NewLife's ApiClient encodes them (nil: none; bytes
// and strings raw; primitives as text; anything else JSON, into which the
// token and headers are merged as keys, as NewLife merges them into the
// argument object).
func appendRequest(dst []byte, action string, args any, token string, headers map[string]string) ([]byte, error) {
	if len(action) == 0 || len(action) > MaxActionLen || !validAction([]byte(action)) {
		return dst, fmt.Errorf("%w: action %q (1 to %d ASCII bytes)", ErrSignature, action, MaxActionLen)
	}
	dst = appendName(dst, action)
	if args == nil {
		return dst, nil
	}
	off := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	out, k, err := appendValue(dst, args)
	if err != nil {
		return dst[:off], err
	}
	if k == kindNull {
		return out[:off], nil
	}
	if k == kindJSON && (token != "" || len(headers) > 0) {
		out = mergeKeys(out, off+4, token, headers)
	}
	patchDataLen(out, off)
	return out, nil
}

// mergeKeys adds Token and the headers (sorted by key) to the JSON object
// that starts at b[from:], when it is one.
func mergeKeys(b []byte, from int, token string, headers map[string]string) []byte {
	obj := b[from:]
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return b
	}
	b = b[:len(b)-1]
	empty := len(obj) == 2
	add := func(k, v string) {
		if !empty {
			b = append(b, ',')
		}
		empty = false
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		b = append(append(append(b, kb...), ':'), vb...)
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
	return append(b, '}')
}
