package codec

import (
	"errors"
	"testing"
)

// foreignProtocol names HTTP/1.x, TLS and HTTP/2 first bytes, and never an
// SRMP reply's or push's.
func TestForeignProtocolNamesOnlyOthers(t *testing.T) {
	for _, c := range []struct {
		in      string
		foreign bool
	}{
		{"HTTP/1.1 400 Bad Request\r\n", true},
		{"HTTP/1.0 200 OK\r\n", true},
		{"\x15\x03\x01\x00\x02\x02\x32", true},
		{"\x16\x03\x03\x00\x40", true},
		{"\x00\x00\x00\x04\x00\x00\x00\x00\x00", true},
		{"\x00\x00\x06\x04\x01\x00\x00\x00\x00", true},
		{"\x81\x01\x05\x00\x03Add", false},          // a reply
		{"\xc1\x01\x05\x00\x03Add", false},          // an error reply
		{"\x41\x00\x05\x00\x04Note", false},         // a push
		{"HTTP/", false},                            // too short to tell
		{"\x00\x00\x00\x04\x00\x00\x00\x01", false}, // a SETTINGS frame on a stream: no
	} {
		err := foreignProtocol([]byte(c.in))
		if (err != nil) != c.foreign || err != nil && !errors.Is(err, ErrNotSRMP) {
			t.Errorf("%q: %v, want foreign %v", c.in, err, c.foreign)
		}
	}
}

func FuzzForeignProtocol(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\n"))
	f.Add([]byte("\x81\x01\x05\x00\x03Add"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := foreignProtocol(b); err != nil && (b[0] >= 0x80 || b[0]&0xFC == 0x40) { // a reply, or a push of NewLife's flags
			t.Fatalf("an SRMP reply's first byte %02X taken for %v", b[0], err)
		}
	})
}
