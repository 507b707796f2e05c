package rpc

import (
	"bytes"
	"testing"
)

// validAction, eight bytes at a time, answers as a byte-by-byte check
// does for every byte value at every place in names of 1 to 20 bytes.
func TestValidActionMatchesAByteLoop(t *testing.T) {
	byteLoop := func(a []byte) bool {
		for _, c := range a {
			if c >= 127 {
				return false
			}
		}
		return len(a) > 0
	}
	if validAction(nil) {
		t.Fatal("the empty name is valid")
	}
	for n := 1; n <= 20; n++ {
		for at := range n {
			for c := range 256 {
				a := bytes.Repeat([]byte{'~'}, n) // 126, the highest valid byte
				a[at] = byte(c)
				if got, want := validAction(a), byteLoop(a); got != want {
					t.Fatalf("validAction(%q) = %v, want %v", a, got, want)
				}
			}
		}
	}
}
