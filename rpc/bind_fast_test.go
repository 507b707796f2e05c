package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
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
