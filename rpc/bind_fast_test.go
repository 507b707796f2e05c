package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// simpleEntry must agree with the full parser whenever it answers.
func FuzzSimpleEntry(f *testing.F) {
	for _, s := range []string{`{"input":"x"}`, ` { "a" : 42 } `, `{"a":-1.5e3}`, `{"a":true}`, `{"a":null}`,
		`{"Token":"t"}`, `{"a":"x\"y"}`, `{"a":1,"b":2}`, `{"a":"x"`, `{"a\"b":1}`, `{"a":01}`, `{"a":"\u00e9"}`,
		`{"input":"0123456789abcdefghij"}`, `{"input":"0123456789\"abcdef"}`, "{\"input\":\"01234567\x01abc\"}",
		`{"input":"héllo wörld, ünïcode"}`, `{"input":"01234567"}`, `{"input":"0123456"}`, `{"input":"012345678`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := simpleEntry(b)
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("simpleEntry took %q, which is not a JSON object: %v", b, err)
		}
		if len(m) != 1 {
			t.Fatalf("simpleEntry took %q with %d entries", b, len(m))
		}
		for _, raw := range m {
			if !bytes.Equal(raw, v) {
				t.Fatalf("simpleEntry(%q) = %q, the parser says %q", b, v, raw)
			}
		}
	})
}

func TestBindStringForms(t *testing.T) {
	for in, want := range map[string]string{
		`hello`:                 "hello",
		`"quoted"`:              "quoted",
		`{"input":"x"}`:         "x",
		`{"input":"a\"b"}`:      `a"b`,
		`{"Token":"t","s":"v"}`: "v",
		`{"n":5}`:               "5",
	} {
		got, err := bindString([]byte(in))
		if err != nil || got != want {
			t.Errorf("bindString(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := bindString([]byte(`{"a":"1","b":"2"}`)); err == nil {
		t.Error("two entries bound to one string parameter")
	}
}

// plainStringEnd finds the closing quote at every offset, and stops at an
// escape or a control byte wherever it is, across its 8-byte steps.
func TestPlainStringEnd(t *testing.T) {
	for n := range 24 {
		body := bytes.Repeat([]byte("é"), n)[:n] // bytes ≥ 0x80 are plain
		if got := plainStringEnd(append(append([]byte(nil), body...), `"}`...), 0); got != n {
			t.Errorf("quote after %d plain bytes: %d", n, got)
		}
		for _, stop := range []byte{'\\', 0x00, 0x1F} {
			b := append(append(append([]byte(nil), body...), stop), `"}`...)
			if got := plainStringEnd(b, 0); got != -1 {
				t.Errorf("%#x after %d plain bytes: %d; want -1", stop, n, got)
			}
		}
		if got := plainStringEnd(body, 0); got != -1 {
			t.Errorf("no quote in %d bytes: %d; want -1", n, got)
		}
	}
}

// eachEntry in strict mode must agree with encoding/json whenever it
// answers: the object is valid, and its entries are the parser's (for keys
// given once).
func FuzzEachEntry(f *testing.F) {
	for _, s := range []string{`{"input":"x","Token":"t1","traceparent":"00-a-b-01"}`, `{}`, ` { "a" : [1,{"b":"}"}] , "c":null } `,
		`{"a":"x\"y","b":tru}`, `{"a":1,}`, `{"a":{"b":}}`, `{"a":"\u00e9","b":-0.5e3}`, `{"a":1}x`, `{"a":1,"a":2}`, `{"\u0054oken":"x","a\"b":1}`, `{"a\u00":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var keys, vals []string
		if !eachEntry(b, true, func(k, v []byte) { keys, vals = append(keys, string(k)), append(vals, string(v)) }) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("eachEntry read %q, which encoding/json refuses: %v", b, err)
		}
		count := map[string]int{}
		for _, k := range keys {
			count[k]++
		}
		for i, k := range keys {
			if count[k] == 1 && utf8.ValidString(k) && string(m[k]) != vals[i] { // (the parser mends invalid UTF-8 in keys)
				t.Fatalf("eachEntry(%q): %s = %s, the parser says %s", b, k, vals[i], m[k])
			}
		}
	})
}

// A primitive binds from the one entry that is not a reserved key or one
// of the server's metadata keys.
func TestSingleEntrySkipsReservedKeys(t *testing.T) {
	keys := newKeySet([]string{"Tenant"})
	for in, want := range map[string]string{
		`{"input":"x","Token":"t","TraceId":"00-a-b-00","traceparent":"00-a-c-01"}`: `"x"`,
		`{"Request-Id":"|a.b_","n":5,"eagleeye-traceid":"a-b","Timeout-Ms":100}`:    `5`,
		`{"tenant":"acme","input":"y"}`:                                             `"y"`,
		`{"Tenant":"acme"}`:                                                         ``,
		`{"input":"a\"b","traceparent":"x"}`:                                        `"a\"b"`,
	} {
		got, err := singleEntry([]byte(in), keys)
		if err != nil || string(got) != want {
			t.Errorf("singleEntry(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := singleEntry([]byte(`{"tenant":"acme","input":"y"}`), nil); err == nil {
		t.Error("without the metadata key, two entries bound to one value")
	}
}
