package rpc_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// ClientConfig.Framer.MaxFrame bounds a ws:// client's replies as it does
// a tcp:// one's: a reply just past the default 10 MiB passes under an
// 11 MiB limit on both.
func TestWSClientTakesMaxFrameFromItsConfig(t *testing.T) {
	fc := codec.DefaultFramerConfig()
	fc.MaxFrame = 11 << 20
	fc.Expire = time.Minute // -race on a loaded machine may take more than the default 5 s to move 10 MiB
	_, addr := startServer(t, rpc.Config{Framer: fc}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	})
	payload := bytes.Repeat([]byte{0xAB}, codec.DefaultMaxFrame+1<<10)
	for _, scheme := range []string{"tcp", "ws"} {
		cl := dialClient(t, scheme+"://"+addr+"/", rpc.ClientConfig{Framer: fc, Timeout: time.Minute}) // -race makes 10 MiB slow
		b, err := rpc.Call[[]byte](context.Background(), cl, "Bench/EchoPacket", payload)
		if err != nil || !bytes.Equal(b, payload) {
			t.Errorf("%s://, a reply of 10 MiB and 1 KiB under an 11 MiB MaxFrame: %d bytes, %v", scheme, len(b), err)
		}
	}
}
