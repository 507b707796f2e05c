package rpc_test

import (
	"bytes"
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
	"github.com/lifenet/lifenet/rpc"
)

// wsFrame is a client frame (masked with a zero key: the payload as it
// is) with FIN as given, of a payload under 126 bytes.
func wsFrame(fin bool, op ws.Opcode, payload []byte) []byte {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	return append([]byte{b0, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
}

// RFC 6455 §5.4: a fragmented message is one data frame without FIN, then
// continuation frames, the last with FIN; control frames may come between.
func TestWebSocketFragmentedMessage(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := wsOpen(t, addr)
	req := srmp(b0Request, 1, body(t, "Bench/EchoString", "hi"))
	rc.write(wsFrame(false, ws.Binary, req[:5]))
	rc.write(wsFrame(true, ws.Ping, []byte("p")))
	rc.write(wsFrame(false, ws.Continuation, req[5:9]))
	rc.write(wsFrame(true, ws.Continuation, req[9:]))
	if f := rc.readWS(); f.Op != ws.Pong {
		t.Fatalf("first answer %v, want the pong", f.Op)
	}
	f := rc.readWS()
	if fr, err := readSRMPBytes(f.Payload); f.Op != ws.Binary || err != nil || fr.b0 != b0Reply || fr.seq != 1 {
		t.Fatalf("reply %v %x: %v", f.Op, f.Payload, err)
	}
}

// A continuation frame with no message to continue, and a new message
// before the last one ended, fail the connection with 1002 (RFC 6455
// §5.4, §7.1.7); NewLife reads any data frame's payload.
func TestWebSocketBadFragmentsFail(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	req := srmp(b0Request, 1, body(t, "Bench/EchoString", "hi"))
	for name, frames := range map[string][][]byte{
		"orphan continuation":           {wsFrame(true, ws.Continuation, req)},
		"a message inside a fragmented": {wsFrame(false, ws.Binary, req[:5]), wsFrame(true, ws.Binary, req[5:])},
	} {
		rc := wsOpen(t, addr)
		for _, fr := range frames {
			rc.write(fr)
		}
		f := rc.readWS()
		if code, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || code != ws.CloseProtocolError {
			t.Errorf("%s: %v %q, want a 1002 close", name, f.Op, f.Payload)
			continue
		}
		rc.expectEOF()
	}
}

// readSRMPBytes reads the one SRMP frame b holds.
func readSRMPBytes(b []byte) (frame, error) { return readSRMP(bytes.NewReader(b)) }
