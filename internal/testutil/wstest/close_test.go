package wstest_test

import (
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

func TestValidCloseCode(t *testing.T) {
	valid := []uint16{1000, 1001, 1002, 1003, 1007, 1010, 1011, 1014, 3000, 4000, 4999}
	invalid := []uint16{0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}
	for _, c := range valid {
		if !ws.ValidCloseCode(c) {
			t.Errorf("ValidCloseCode(%d) = false", c)
		}
	}
	for _, c := range invalid {
		if ws.ValidCloseCode(c) {
			t.Errorf("ValidCloseCode(%d) = true", c)
		}
	}
}

func TestValidClosePayload(t *testing.T) {
	cases := []struct {
		payload []byte
		want    bool
	}{
		{nil, true},
		{[]byte{0x03}, false},
		{[]byte{0x03, 0xE8}, true},
		{[]byte{0x03, 0xE8, 'o', 'k'}, true},
		{[]byte{0x03, 0xE8, 0xFF}, false},
		{[]byte{0x03, 0xEE}, false}, // 1006
	}
	for _, c := range cases {
		if got := ws.ValidClosePayload(c.payload); got != c.want {
			t.Errorf("ValidClosePayload(% X) = %v, want %v", c.payload, got, c.want)
		}
	}
}
