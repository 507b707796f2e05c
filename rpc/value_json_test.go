package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// appendJSON writes what json.Marshal writes, after what dst holds, and
// leaves dst as it was on an error.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	type args struct {
		Input string  `json:"input"`
		N     int     `json:"n"`
		F     float64 `json:"f"`
		Tags  []string
	}
	for _, v := range []any{
		args{Input: `<a href="x">&</a> é \u2028 ` + "\u2028\x01\n", N: -3, F: 1e21, Tags: []string{"a", ""}},
		map[string]any{"b": 1, "a": []int{1, 2}, "c": nil},
		[]args{{}, {Input: "x"}},
		struct{}{},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSON([]byte("prefix:"), v)
		if err != nil || !bytes.Equal(got, append([]byte("prefix:"), want...)) {
			t.Errorf("appendJSON(%#v) = %q, %v; want prefix:%s", v, got, err, want)
		}
	}
	for _, bad := range []any{make(chan int), math.NaN(), map[bool]int{true: 1}} {
		dst := []byte("keep")
		got, err := appendJSON(dst, bad)
		var unsupported *json.UnsupportedTypeError
		var badValue *json.UnsupportedValueError
		if err == nil || (!errors.As(err, &unsupported) && !errors.As(err, &badValue)) || string(got) != "keep" {
			t.Errorf("appendJSON(%T) = %q, %v; want dst unchanged and json's error", bad, got, err)
		}
	}
}
