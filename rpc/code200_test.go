package rpc_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// okBody is a success reply's body as NewLife writes it: the action's
// name, then the data block (int32 LE length, the bytes).
func okBody(action, data string) []byte {
	b := append([]byte{byte(len(action))}, action...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// NewLife's EncoderBase.Encode and JsonEncoder.CreateResponse: code 0 and
// 200 are success, so throw new ApiException(200, "x") answers a plain
// reply (81, no code) whose data is "x"; over HTTP, code 0 and data "x".
func TestCode200IsSuccessOnTheServer(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Test/Ok200", func(context.Context, struct{}) (string, error) { return "", rpc.NewError(200, "done") }))
		must(t, rpc.Handle(srv, "Test/Ok200Empty", func(context.Context, struct{}) (string, error) { return "", rpc.NewError(200, "") }))
	})
	rc := dialRaw(t, addr)
	// NewLife's request: 01 seq len | 0A "Test/Ok200" | 00 00 00 00 (no data)
	rc.write(srmp(b0Request, 7, okBody("Test/Ok200", "")[:11]))
	f := rc.readFrame()
	if f.b0 != b0Reply || f.seq != 7 || string(f.payload) != string(okBody("Test/Ok200", "done")) {
		t.Fatalf("SRMP reply %02x seq %d % x, want 81 seq 7 % x", f.b0, f.seq, f.payload, okBody("Test/Ok200", "done"))
	}
	rc.write(srmp(b0Request, 8, []byte("\x0fTest/Ok200Empty")))
	if f := rc.readFrame(); f.b0 != b0Reply || string(f.payload) != "\x0fTest/Ok200Empty" {
		t.Fatalf("SRMP reply %02x % x, want 81 and no data", f.b0, f.payload)
	}
	hc := dialRaw(t, addr)
	resp, got := hc.httpDo("GET /Test/Ok200 HTTP/1.1\r\nHost: x\r\n\r\n")
	if want := `{"action":"Test/Ok200","code":0,"data":"done"}`; resp.StatusCode != 200 || got != want {
		t.Fatalf("HTTP %d %s, want 200 %s", resp.StatusCode, got, want)
	}
}

// NewLife's ApiClient: if (message.Code is not Ok and not Ok200) throw —
// an error reply (C1) with code 200 is a success whose data is the
// message.
func TestCode200IsSuccessOnTheClient(t *testing.T) {
	addr := fakeServer(t, func(f frame) []byte {
		return srmp(b0Error, f.seq, errBody("Test/Ok200", 200, "done"))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	got, err := rpc.Call[string](context.Background(), cl, "Test/Ok200", nil)
	if err != nil || got != "done" {
		t.Fatalf("Call = %q, %v; want \"done\", nil", got, err)
	}
	if err := cl.Invoke(context.Background(), "Test/Ok200", nil, nil); err != nil {
		t.Fatalf("Invoke without a result: %v", err)
	}
}
