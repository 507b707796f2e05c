package rpc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

type bindPair struct {
	A int32
	B int64 `json:"bee"`
	S string
	F bool
}

func TestBatteryBindArgStruct(t *testing.T) {
	cases := []struct {
		in   string
		want bindPair
	}{
		{`{"A":1,"bee":2}`, bindPair{A: 1, B: 2}},
		{`{"a":1,"BEE":2,"s":"x","f":true}`, bindPair{A: 1, B: 2, S: "x", F: true}},
		{`{"a":"1","bee":"2","s":"3","f":"true"}`, bindPair{A: 1, B: 2, S: "3", F: true}},
		{` {"A":5} `, bindPair{A: 5}},
		{`{"A":1,"Token":"t","Other":9}`, bindPair{A: 1}},
		{`{}`, bindPair{}},
	}
	for _, c := range cases {
		var got bindPair
		if err := bindArg([]byte(c.in), nil, &got); err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"a":"x"}`, `{"a":1.5}`, `[1,2]`, `{"a":`, `{"f":"maybe"}`} {
		var got bindPair
		if err := bindArg([]byte(bad), nil, &got); !errors.Is(err, ErrArgs) {
			t.Errorf("%s: error %v, want ErrArgs", bad, err)
		}
	}
	var zero bindPair
	if err := bindArg(nil, nil, &zero); err != nil || zero != (bindPair{}) {
		t.Errorf("empty data: %+v, %v; want the zero value", zero, err)
	}
}

func TestBatteryBindArgPrimitive(t *testing.T) {
	var n int
	for in, want := range map[string]int{"5": 5, " 7 ": 7, `{"input":8}`: 8, `{"x":"9"}`: 9, `{"Token":"t","v":10}`: 10, `"11"`: 11} {
		n = 0
		if err := bindArg([]byte(in), nil, &n); err != nil || n != want {
			t.Errorf("int from %s: %d, %v; want %d", in, n, err, want)
		}
	}
	var s string
	for in, want := range map[string]string{"x y": "x y", `{"input":"x"}`: "x", `{"Token":"t","input":"y"}`: "y", `{"n":5}`: "5", " pad ": " pad "} {
		s = ""
		if err := bindArg([]byte(in), nil, &s); err != nil || s != want {
			t.Errorf("string from %s: %q, %v; want %q", in, s, err, want)
		}
	}
	var f float64
	if err := bindArg([]byte("2.5"), nil, &f); err != nil || f != 2.5 {
		t.Errorf("float: %v, %v", f, err)
	}
	var b bool
	if err := bindArg([]byte("True"), nil, &b); err != nil || !b {
		t.Errorf("bool from True (as .NET writes it): %v, %v", b, err)
	}
	for _, none := range []string{`{"Token":"t"}`, `{"traceparent":"00-a-b-01","TraceId":"x"}`} {
		n = 7
		if err := bindArg([]byte(none), nil, &n); err != nil || n != 7 {
			t.Errorf("int from %s (reserved keys alone: no value): %d, %v", none, n, err)
		}
	}
	for _, bad := range []string{"abc", `{"a":1,"b":2}`, `{}`, "99999999999999999999", `{"a":`} {
		n = 0
		if err := bindArg([]byte(bad), nil, &n); !errors.Is(err, ErrArgs) {
			t.Errorf("int from %s: %v, want ErrArgs", bad, err)
		}
	}
	var u uint8
	if err := bindArg([]byte("256"), nil, &u); !errors.Is(err, ErrArgs) {
		t.Errorf("uint8 from 256: %v, want ErrArgs", err)
	}
}

func TestBatteryBindArgBytes(t *testing.T) {
	data := []byte(`{"a":1}`)
	var b []byte
	if err := bindArg(data, nil, &b); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("bytes: %q, %v", b, err)
	}
	if &b[0] != &data[0] {
		t.Error("a []byte argument was copied; it should alias the data")
	}
}

func TestBatteryRegistryFind(t *testing.T) {
	var r registry
	if r.find([]byte("Any/Thing")) != nil {
		t.Fatal("an empty registry found an action")
	}
	add := func(name string) *action {
		a := &action{name: name}
		if err := r.add(a); err != nil {
			t.Fatalf("add %q: %v", name, err)
		}
		return a
	}
	exact := add("Bench/Add")
	mixed := add("bench/NOARG")
	ctrl := add("Bench/*")
	cases := []struct {
		name string
		want *action
	}{
		{"Bench/Add", exact},
		{"bench/add", exact},
		{"BENCH/ADD", exact},
		{"Bench/NoArg", mixed},
		{"Bench/Zzz", ctrl},
		{"bench/zzz", ctrl},
		{"Other/Q", nil},
		{"Bench", nil},
		{strings.Repeat("x", 200), nil},
	}
	for _, c := range cases {
		if got := r.find([]byte(c.name)); got != c.want {
			t.Errorf("find %q: %v, want %v", c.name, got, c.want)
		}
	}
	star := add("*")
	for name, want := range map[string]*action{"Other/Q": star, "Bench/Zzz": ctrl, "Bench": star, strings.Repeat("x", 200): star, "Bench/Add": exact} {
		if got := r.find([]byte(name)); got != want {
			t.Errorf("with *: find %.20q: %v, want %v", name, got, want)
		}
	}
	for _, dup := range []string{"Bench/Add", "BENCH/add", "bench/*", "*"} {
		if err := r.add(&action{name: dup}); !errors.Is(err, ErrDuplicate) {
			t.Errorf("add %q again: %v, want ErrDuplicate", dup, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("a", MaxActionLen+1), "Bench/É", "Bench/\x7f"} {
		if err := r.add(&action{name: bad}); !errors.Is(err, ErrSignature) {
			t.Errorf("add %.20q: %v, want ErrSignature", bad, err)
		}
	}
	if err := r.add(&action{name: strings.Repeat("a", MaxActionLen)}); err != nil {
		t.Errorf("a %d-byte name: %v", MaxActionLen, err)
	}
	if allocs := testing.AllocsPerRun(100, func() { r.find([]byte("bench/zzz")) }); allocs != 0 {
		t.Errorf("find allocates %.0f times", allocs)
	}
}

// The typed invoker binds, calls and encodes, and Process answers as the
// socket path does (no session: SessionFrom is nil).
func TestBatteryProcessDirect(t *testing.T) {
	s, err := NewServer(Config{Log: nil})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sawSession bool
	if err := Handle(s, "T/Sum", func(ctx context.Context, a bindPair) (int64, error) {
		sawSession = SessionFrom(ctx) != nil
		return int64(a.A) + a.B, nil
	}); err != nil {
		t.Fatal(err)
	}
	reply, isErr, ok := s.Process(context.Background(), []byte("\x05T/Sum\x0f\x00\x00\x00{\"a\":2,\"bee\":3}"), nil)
	if !ok || isErr || string(reply) != "\x05T/Sum\x01\x00\x00\x005" || sawSession {
		t.Errorf("T/Sum: %q isErr %v ok %v session %v", reply, isErr, ok, sawSession)
	}
	reply, isErr, ok = s.Process(context.Background(), []byte("\x05T/Sum\x03\x00\x00\x00[1]"), nil)
	m, perr := parseBody(reply, true)
	if !ok || !isErr || perr != nil || m.code != CodeBadRequest {
		t.Errorf("bad args: %q isErr %v ok %v code %d", reply, isErr, ok, m.code)
	}
	for _, dropped := range [][]byte{{0}, []byte("\x02\xc3\xa9"), {0x05, 'T'}, []byte("\x05T/Sum\x01")} {
		if _, _, ok := s.Process(context.Background(), dropped, nil); ok {
			t.Errorf("% X answered; NewLife drops it", dropped)
		}
	}
	if got := s.Stats().Dropped; got != 4 {
		t.Errorf("Dropped %d, want 4", got)
	}
}
