package rpc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// The reserved argument keys: what a call carries besides its arguments,
// merged into its argument object as NewLife merges ApiClient.Token, its
// Headers and its tracer's traceparent (docs/PROTOCOL.md §5.2a). A server
// finds them case-insensitively, as NewLife's dictionary does, counts none
// of them when a primitive parameter binds from an object's one entry, and
// leaves them in the data: a struct with a field of their name still binds
// it.
const (
	keyToken       = "Token"            // the caller's token (NewLife ApiClient.Token)
	keyTraceparent = "traceparent"      // W3C trace context (NewLife ISpan.Attach)
	keyTraceID     = "TraceId"          // NewLife's ambient span (ApiClient.Headers["TraceId"])
	keyRequestID   = "Request-Id"       // read by NewLife's Detach
	keyEagleeye    = "Eagleeye-Traceid" // read by NewLife's Detach
	keyTimeout     = "Timeout-Ms"       // lifenet: the caller's remaining time, in ms
)

// Which reserved key a key is (0: none). The trace keys come first, in
// the order NewLife's SpanExtension.Detach ranks them (the first found of
// traceparent, Request-Id, Eagleeye-Traceid and TraceId): a higher kind
// wins.
const (
	rkNone = iota
	rkTraceID
	rkEagleeye
	rkRequestID
	rkTraceparent
	rkToken
	rkTimeout
	rkMetadata // one of the server's Config.MetadataKeys
)

// reservedKeys are the reserved keys by kind.
var reservedKeys = [...]string{rkTraceID: keyTraceID, rkEagleeye: keyEagleeye, rkRequestID: keyRequestID,
	rkTraceparent: keyTraceparent, rkToken: keyToken, rkTimeout: keyTimeout}

// keySet is a server's Config.MetadataKeys (nil: none).
type keySet struct{ keys []string }

// kind says which reserved key k is, in any case, counting the set's keys
// as rkMetadata.
func (s *keySet) kind(k []byte) int {
	for rk, name := range reservedKeys {
		if foldEq(k, name) { // "" (rkNone) for an empty key
			return rk
		}
	}
	if s != nil {
		for _, m := range s.keys {
			if len(m) == len(k) && foldEq(k, m) {
				return rkMetadata
			}
		}
	}
	return rkNone
}

// foldEq reports whether b equals s in ASCII case-insensitively.
func foldEq(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) { // bytes that differ must be one letter in two cases
		if x := b[i] | 0x20; b[i] != s[i] && (x != s[i]|0x20 || x < 'a' || x > 'z') {
			return false
		}
	}
	return true
}

// eachEntry calls f with the key (without its quotes) and the raw value of
// each top-level entry of the JSON object data, in order. It returns false
// when it cannot read data as such an object: not an object, or malformed.
// It allocates nothing but the text of a key with an escape (unescaped for
// f). strict validates every value as encoding/json would (then a true
// result means data is valid JSON); otherwise objects and arrays are only
// skipped, which is enough to find the top-level keys. It builds nothing
// per entry: an object of a million keys costs a walk over its bytes.
// (data leaks to f: a caller whose data must stay on its stack uses
// openObject and nextEntry.)
func eachEntry(data []byte, strict bool, f func(key, val []byte)) bool {
	i, st := openObject(data)
	for st == entryMore {
		var ks, ke, vs, ve int
		ks, ke, vs, ve, i, st = nextEntry(data, i, strict)
		if st == entryBad {
			break
		}
		k := data[ks:ke]
		if bytes.IndexByte(k, '\\') >= 0 {
			var u string
			if json.Unmarshal(data[ks-1:ke+1], &u) != nil {
				return false
			}
			k = []byte(u)
		}
		f(k, data[vs:ve])
	}
	return st == entryLast
}

// The states of a walk over an object's entries.
const (
	entryBad  = iota // not an object nextEntry can read
	entryMore        // an entry starts at the index
	entryLast        // the object ended, well formed
)

// openObject starts a walk over the JSON object b: the index of its first
// entry and entryMore, entryLast for {}, or entryBad.
func openObject(b []byte) (int, int) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, entryBad
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) == len(b) {
			return i, entryLast
		}
		return i, entryBad
	}
	return i, entryMore
}

// nextEntry reads the entry of the JSON object b at index i: the bounds of
// its key (without the quotes; escapes as they are) and of its value, the
// index of the next entry, and the walk's state after it (entryBad: the
// entry, or what follows it, cannot be read; see eachEntry).
func nextEntry(b []byte, i int, strict bool) (ks, ke, vs, ve, next, st int) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, 0, 0, i, entryBad
	}
	ks = i + 1
	if ke = skipString(b, i) - 1; ke < 0 {
		return 0, 0, 0, 0, i, entryBad
	}
	i = skipSpace(b, ke+1)
	if i >= len(b) || b[i] != ':' {
		return 0, 0, 0, 0, i, entryBad
	}
	vs = skipSpace(b, i+1)
	if ve = skipValue(b, vs, strict); ve < 0 {
		return 0, 0, 0, 0, i, entryBad
	}
	i = skipSpace(b, ve)
	if i >= len(b) {
		return 0, 0, 0, 0, i, entryBad
	}
	switch b[i] {
	case ',':
		return ks, ke, vs, ve, skipSpace(b, i+1), entryMore
	case '}':
		if skipSpace(b, i+1) == len(b) {
			return ks, ke, vs, ve, i, entryLast
		}
	}
	return 0, 0, 0, 0, i, entryBad
}

// skipValue returns the index just past the JSON value at b[i], or -1.
func skipValue(b []byte, i int, strict bool) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		end := skipNested(b, i)
		if end < 0 || strict && !json.Valid(b[i:end]) {
			return -1
		}
		return end
	default:
		s := i
		for i < len(b) && (b[i] == '-' || b[i] == '+' || b[i] == '.' || (b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'z') || b[i] == 'E') {
			i++
		}
		if i == s || !json.Valid(b[s:i]) {
			return -1
		}
		return i
	}
}

// skipString returns the index just past the JSON string whose quote is
// at b[i], or -1 when it does not end or is not valid.
func skipString(b []byte, i int) int {
	if end := plainStringEnd(b, i+1); end >= 0 {
		return end + 1
	}
	j := stringEnd(b, i)
	if j >= len(b) || !json.Valid(b[i:j+1]) {
		return -1
	}
	return j + 1
}

// stringEnd returns the index of the quote that ends the JSON string whose
// quote is at b[i] (escapes skipped, not checked), or len(b) when none
// does.
func stringEnd(b []byte, i int) int {
	if end := plainStringEnd(b, i+1); end >= 0 {
		return end
	}
	for i++; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return min(i, len(b))
}

// countKeys counts the keys of the JSON document b at every depth (the
// colons outside strings), stopping once it passes limit. It builds
// nothing: a walk over b's bytes.
func countKeys(b []byte, limit int) int {
	n := 0
	for i := 0; i < len(b) && n <= limit; i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case ':':
			n++
		}
	}
	return n
}

// skipNested returns the index just past the object or array at b[i]
// (strings inside skipped as strings), or -1 when it does not end.
func skipNested(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			if i = stringEnd(b, i); i >= len(b) {
				return -1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// callData is what a server finds in a request's argument object besides
// the arguments: the reserved keys' values (raw JSON, aliasing the data)
// and the Config.MetadataKeys entries.
type callData struct {
	token    []byte
	hasToken bool
	// trace is the raw value of the trace key of highest rank found
	// (traceKey, its kind: traceparent, Request-Id, Eagleeye-Traceid,
	// TraceId, as NewLife's Detach looks them up).
	trace    []byte
	traceKey int
	timeout  []byte
	md       int  // entries that are reserved (but Token) or metadata keys: what Metadata shows
	others   int  // entries that are neither reserved nor metadata keys: the arguments
	object   bool // data is an object that was read
}

// scanCall finds the reserved keys and metadata of a request's data (keys
// adds the server's metadata keys) in one walk over its top-level keys,
// building nothing per key. Data that is no object, or a malformed one,
// finds none.
func scanCall(data []byte, keys *keySet) (d callData) {
	if len(data) < 2 {
		return d
	}
	if tokenOnly(data) { // a lifenet client's call without arguments: nothing to parse
		d.token, d.hasToken, d.object = data[len(tokenHead)-1:len(data)-1], true, true
		return d
	}
	if !isJSON(data) {
		return d
	}
	note := func(k, v []byte) {
		switch rk := keys.kind(k); rk {
		case rkNone:
			d.others++
		case rkToken:
			d.token, d.hasToken = v, true
		default:
			d.md++
			if rk <= rkTraceparent && rk > d.traceKey {
				d.trace, d.traceKey = v, rk
			} else if rk == rkTimeout {
				d.timeout = v
			}
		}
	}
	if eachEntry(data, false, note) {
		d.object = true
		return d
	}
	return callData{} // not an object, or malformed: the binder says what is wrong
}

// plainText returns the text of the raw JSON value v without allocating
// when it is a string without escapes (its bytes between the quotes) or a
// literal (as it is; null: nothing, as NewLife's token + "" reads it);
// ok is false for a string with escapes.
func plainText(v []byte) (t []byte, ok bool) {
	switch {
	case string(v) == "null":
		return nil, true
	case len(v) >= 2 && v[0] == '"':
		if end := plainStringEnd(v, 1); end == len(v)-1 {
			return v[1:end], true
		}
		return nil, false
	}
	return v, true
}

// textOf is the text of a raw JSON value: a string's, a literal as it is.
func textOf(v []byte) string {
	if t, ok := plainText(v); ok {
		return string(t)
	}
	return trimText(v)
}

// timeoutOf is the deadline a Timeout-Ms entry's raw value gives, counted
// from now: a positive number of milliseconds, as a number or a string.
func timeoutOf(v []byte, now time.Time) (time.Time, bool) {
	if len(v) == 0 {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(textOf(v), 10, 64)
	if err != nil || ms <= 0 || ms > maxTimeoutMs {
		return time.Time{}, false // past what a Duration holds (292 years): no deadline, not one wrapped into the past
	}
	return now.Add(time.Duration(ms) * time.Millisecond), true
}

// maxTimeoutMs is the longest Timeout-Ms a time.Duration holds.
const maxTimeoutMs = int64(math.MaxInt64 / time.Millisecond)

// TraceContext is a call's trace context in the form NewLife and W3C carry
// it (traceparent "00-{TraceID}-{SpanID}-{Flags:02x}"): a server finds the
// caller's in the request, and a client sends the one in its call's
// context (see [WithTraceContext]). lifenet keeps no spans of its own: an
// OpenTelemetry integration starts them from this in an [Interceptor].
// IDs are kept as they come: NewLife's trace IDs have 30 characters, not
// W3C's 32 hex digits.
type TraceContext struct {
	TraceID string
	SpanID  string // the caller's span: the parent of the server's
	Flags   byte   // W3C trace-flags; 1: sampled
}

// String returns tc as a traceparent value: "00-{TraceID}-{SpanID}-{Flags}"
// (NewLife's DefaultSpan.ToString).
func (tc TraceContext) String() string { return string(appendTraceparent(nil, tc)) }

func appendTraceparent(dst []byte, tc TraceContext) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, "00-"...)
	dst = append(dst, tc.TraceID...)
	dst = append(dst, '-')
	dst = append(dst, tc.SpanID...)
	return append(dst, '-', hex[tc.Flags>>4], hex[tc.Flags&15])
}

// ParseTraceContext reads a traceparent value as NewLife's
// SpanExtension.Detach reads a TraceId: "00-{trace}-{span}-{flags}", each
// part as it is, of any length up to 128 (NewLife's trace IDs have 30
// characters), flags in hex; a value without '-' is a bare trace ID. ok
// is false when it gives no trace ID, or IDs with other than visible
// ASCII characters or longer than 128 (a call carries its caller's trace
// context on, in an HTTP header too, where a control character would fail
// every call).
func ParseTraceContext(s string) (tc TraceContext, ok bool) { return traceFrom(rkTraceID, s) }

// maxTraceID is the longest trace or span ID kept.
const maxTraceID = 128

// traceFrom reads the trace context of a request's trace key of kind rk,
// as NewLife's Detach2 does: traceparent and TraceId as
// ParseTraceContext (a traceparent without '-' gives nothing); Request-Id
// as "|{trace}.{…}.{span}_" (the last part is the parent);
// Eagleeye-Traceid as "{trace}-{span}". Its IDs are held to visible
// ASCII, 1 to maxTraceID characters (a span ID may be empty).
func traceFrom(rk int, s string) (TraceContext, bool) {
	var tc TraceContext
	switch parts := strings.Split(strings.TrimSpace(s), "-"); {
	case rk == rkRequestID:
		parts := strings.FieldsFunc(s, func(c rune) bool { return c == '.' || c == '_' })
		if len(parts) == 0 {
			return tc, false
		}
		tc.TraceID = strings.TrimLeft(parts[0], "|")
		if len(parts) > 1 {
			tc.SpanID = parts[len(parts)-1]
		}
	case rk == rkEagleeye:
		tc.TraceID = parts[0]
		if len(parts) > 1 {
			tc.SpanID = parts[1]
		}
	case len(parts) == 1:
		if rk == rkTraceparent {
			return tc, false
		}
		tc.TraceID = parts[0]
	default:
		tc.TraceID = parts[1]
		if len(parts) > 2 {
			tc.SpanID = parts[2]
		}
		if len(parts) > 3 && len(parts[3]) >= 2 {
			if f, err := strconv.ParseUint(parts[3][:2], 16, 8); err == nil {
				tc.Flags = byte(f)
			}
		}
	}
	if !traceChars(tc.TraceID) || (tc.SpanID != "" && !traceChars(tc.SpanID)) {
		return TraceContext{}, false
	}
	return tc, true
}

func traceChars(id string) bool {
	if id == "" || len(id) > maxTraceID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
