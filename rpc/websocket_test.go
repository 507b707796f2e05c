package rpc_test

import (
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
	"github.com/lifenet/lifenet/rpc"
)

// A close frame whose code may not be sent (RFC 6455 §7.4: 1005 and 1006
// are never sent, 999 and 5000 are out of range), whose payload is one
// byte, or whose reason is not UTF-8 fails the connection with 1002; it is
// not echoed.
func TestWebSocketInvalidCloseFailsWith1002(t *testing.T) {
	cases := map[string][]byte{
		"code 999":      ws.AppendClose(nil, 999, "", &testMask),
		"code 1005":     ws.AppendClose(nil, 1005, "", &testMask),
		"code 1006":     ws.AppendClose(nil, 1006, "", &testMask),
		"code 1015":     ws.AppendClose(nil, 1015, "", &testMask),
		"code 5000":     ws.AppendClose(nil, 5000, "", &testMask),
		"one byte":      ws.AppendFrame(nil, ws.Close, []byte{0x03}, &testMask),
		"invalid UTF-8": ws.AppendFrame(nil, ws.Close, []byte{0x03, 0xE8, 0xFF, 0xFE}, &testMask),
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
			rc := wsOpen(t, addr)
			rc.write(frame)
			f := rc.readWS()
			if code, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || code != ws.CloseProtocolError {
				t.Errorf("answered with %v code %d; want close 1002", f.Op, code)
			}
			rc.expectEOF()
		})
	}
}

// Valid codes, the application range included, are echoed.
func TestWebSocketValidCloseIsEchoed(t *testing.T) {
	for _, code := range []uint16{1000, 1001, 1011, 3000, 4999} {
		_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
		rc := wsOpen(t, addr)
		rc.write(ws.AppendClose(nil, code, "bye", &testMask))
		f := rc.readWS()
		if got, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || got != code {
			t.Errorf("close %d answered with %v code %d", code, f.Op, got)
		}
		rc.expectEOF()
	}
}
