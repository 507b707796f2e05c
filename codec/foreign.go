package codec

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNotSRMP is the close cause of a client's SRMP connection whose peer
// answered in another protocol; the error wrapping it names which, and the
// requests pending on the connection fail with it (wrapped in
// [ErrConnClosed]).
var ErrNotSRMP = errors.New("codec: the peer does not speak SRMP")

// foreignProtocol names the protocol a peer's first bytes are in when it
// is one an SRMP client meets at a wrong address (an HTTP/1.x response, a
// TLS alert or handshake, an HTTP/2 server's SETTINGS frame: a gRPC
// port), or returns nil. SRMP's first byte from a server is a reply (kind
// 10 or 11, 0x80 and up) or a push (kind 01, NewLife's flags below 4:
// 0x40–0x43): none of these starts so ('H' is 0x48; TLS 0x15, 0x16; an
// HTTP/2 frame's length 0x00).
func foreignProtocol(b []byte) error {
	switch {
	case len(b) >= 7 && bytes.HasPrefix(b, []byte("HTTP/1.")):
		return fmt.Errorf("%w: it answered in HTTP/1.x (an HTTP port? call it with http://)", ErrNotSRMP)
	case len(b) >= 3 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03 && b[2] <= 0x04:
		return fmt.Errorf("%w: it answered in TLS (a TLS port? call it with tls://)", ErrNotSRMP)
	case len(b) >= 9 && b[0] == 0 && b[3] == 0x04 && b[4]&^0x01 == 0 && b[5]|b[6]|b[7]|b[8] == 0:
		return fmt.Errorf("%w: it answered in HTTP/2 (a gRPC port?)", ErrNotSRMP)
	}
	return nil
}
