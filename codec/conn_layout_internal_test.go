package codec

import (
	"testing"
	"unsafe"
)

// A parked server connection's codec state is one connOne: its Conn, its
// one stage and that stage's framer. Every byte of it is held by each of
// tens of thousands of idle connections, so it stays within Go's 176-byte
// size class: what only a client, a multi-stage pipeline or a partial
// frame needs lives behind pointers it leaves nil, or in state its server
// shares.
func TestParkedConnIsOneObjectOfAtMost176Bytes(t *testing.T) {
	if n := unsafe.Sizeof(connOne{}); n > 176 {
		t.Errorf("connOne is %d bytes (Conn %d, stage %d, framing %d), want at most 176",
			n, unsafe.Sizeof(Conn{}), unsafe.Sizeof(stage{}), unsafe.Sizeof(framing{}))
	}
}
