package rpc

import (
	"strconv"
	"strings"
	"testing"
)

// wideObject is a JSON object of n distinct keys, the first escaped.
func wideObject(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"\u0054oken":"t"`)
	for i := range n {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":"1"`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// issue 26 F5: the Token lookup, the single-value binder and the lenient
// binder each copied a wide argument object into a map (870 k keys: 120
// MB). They walk it now: the allocations of a call do not grow with its
// keys.
func TestDecodeBuildsNothingPerKey(t *testing.T) {
	wide := wideObject(100_000)
	type args struct{ K7 int }
	for name, f := range map[string]func(){
		"scanCall":         func() { scanCall(wide, nil) },
		"singleEntry":      func() { singleEntry(wide, nil) },
		"paramByName":      func() { paramByName(wide, "k99999") },
		"unmarshalLenient": func() { var a args; unmarshalLenient(wide, &a) },
	} {
		if n := testing.AllocsPerRun(3, f); n > 20 {
			t.Errorf("%s of an object of 100,000 keys: %.0f allocations", name, n)
		}
	}
	var a args
	if err := unmarshalLenient(wide, &a); err != nil || a.K7 != 1 {
		t.Errorf("unmarshalLenient: %+v, %v", a, err)
	}
	if d := scanCall(wide, nil); !d.hasToken || textOf(d.token) != "t" || d.others != 100_000 {
		t.Errorf("scanCall: token %q (%v), %d others", d.token, d.hasToken, d.others)
	}
}

func TestCountKeys(t *testing.T) {
	for in, want := range map[string]int{
		`{}`: 0, `{"a":1}`: 1, `{"a:b":"c:d"}`: 1, `{"a\":":{"b":[{"c":1},{"d":"\\"}]}}`: 4, `[1,2]`: 0, `"x:y"`: 0,
	} {
		if got := countKeys([]byte(in), 100); got != want {
			t.Errorf("countKeys(%s) = %d, want %d", in, got, want)
		}
	}
	if got := countKeys(wideObject(1000), 10); got != 11 {
		t.Errorf("countKeys stops past the limit: %d, want 11", got)
	}
}
