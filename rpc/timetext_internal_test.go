package rpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// parseTime never panics, and a time it writes (timeLayout, NewLife's
// ToFullString) reads back as itself.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"08/02/2026 01:01:05", "2026-08-02T01:01:05.1234567+08:00", "2026-08-02 01:01:05 UTC",
		"20260802", "-1", "/Date(-5+0800)/", "/Date()/", "Z", " UTC", "8/2/2026 1:01 PM", "Sun, 02 Aug 2026 01:01:05 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseTime(s)
		if err != nil {
			if !errors.Is(err, ErrArgs) || len(err.Error()) > 400 { // clip: 64 bytes of input, quoted
				t.Fatalf("parseTime(%q): error %v", s, err)
			}
			return
		}
		if tm.Year() < 0 || tm.Year() > 9999 {
			return // Format writes such years in forms of its own
		}
		text := tm.Format(timeLayout)
		back, err := parseTime(text)
		if err != nil || !back.Equal(tm.Truncate(time.Second)) && tm.Location() == time.Local {
			t.Fatalf("parseTime(%q) = %v, written %q, read back %v, %v", s, tm, text, back, err)
		}
	})
}

type lenientCase struct {
	At   time.Time
	P    *time.Time
	N    int
	F    float64
	Ok   bool
	S    string
	Sub  struct{ When time.Time }
	List []struct{ N int }
	Arr  [2]int
	M    map[string]time.Time
	Raw  json.RawMessage
	Any  any
	embedded
}

type embedded struct{ E int }

// The lenient binder agrees with encoding/json where encoding/json
// accepts the document, fails where it is not JSON, and never panics.
func FuzzUnmarshalLenient(f *testing.F) {
	for _, s := range []string{`{"at":"08/02/2026 01:01:05","p":"2026-08-02T01:01:05Z","n":"3","f":"1.5","ok":"true","s":"x"}`,
		`{"sub":{"when":1785632465},"list":[{"n":"1"},{"n":2}],"arr":["1",2,3],"m":{"a":"20260802"},"e":"4"}`,
		`{"At":"0001-01-01T00:00:00Z","Raw":{"x":[1]},"Any":[1,"a"]}`, `{"n":"x"}`, `[1]`, `{"list":{}}`, `{"p":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want lenientCase
		jerr := json.Unmarshal(b, &want)
		var got lenientCase
		err := unmarshalLenient(b, &got)
		switch {
		case jerr == nil && err != nil:
			t.Fatalf("%s: encoding/json reads it, the binder says %v", b, err)
		case !json.Valid(b) && err == nil:
			t.Fatalf("%s: not JSON, and the binder took it", b)
		case err != nil && !errors.Is(err, ErrArgs):
			t.Fatalf("%s: error %v does not wrap ErrArgs", b, err)
		case err != nil && len(err.Error()) > 1024 && len(b) < 512:
			t.Fatalf("%s: error of %d bytes", b, len(err.Error()))
		}
	})
}

func TestUnmarshalLenientDepth(t *testing.T) {
	type node struct{ Kids []node }
	doc := strings.Repeat(`{"kids":[`, maxBindDepth) + `{"kids":"x"}` + strings.Repeat(`]}`, maxBindDepth)
	var n node
	err := unmarshalLenient([]byte(doc), &n)
	if !errors.Is(err, ErrArgs) || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("a document %d deep: %v", maxBindDepth, err)
	}
}
