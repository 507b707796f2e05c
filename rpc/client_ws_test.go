package rpc_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// ClientConfig.Framer.MaxFrame bounds a ws:// client's replies as it does
// a tcp:// one's: a 12 MiB reply passes under a 32 MiB limit on both.
func TestWSClientTakesMaxFrameFromItsConfig(t *testing.T) {
	fc := codec.DefaultFramerConfig()
	fc.MaxFrame = 32 << 20
	_, addr := startServer(t, rpc.Config{Framer: fc}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	})
	payload := bytes.Repeat([]byte{0xAB}, 12<<20)
	for _, scheme := range []string{"tcp", "ws"} {
		cl := dialClient(t, scheme+"://"+addr+"/", rpc.ClientConfig{Framer: fc})
		b, err := rpc.Call[[]byte](context.Background(), cl, "Bench/EchoPacket", payload)
		if err != nil || !bytes.Equal(b, payload) {
			t.Errorf("%s://, a 12 MiB reply under a 32 MiB MaxFrame: %d bytes, %v", scheme, len(b), err)
		}
	}
}
