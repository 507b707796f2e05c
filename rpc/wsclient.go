package rpc

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/gobwas/ws"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/transport"
)

// wsUpgrade is the transport.ClientConfig.Upgrade of a ws:// or wss://
// connection: the WebSocket handshake to u (subprotocol SRMP, by
// github.com/gobwas/ws), within ctx, then SRMP in WebSocket messages
// (wsConn, the client end: its frames masked).
func wsUpgrade(u *url.URL, cfg ClientConfig) func(context.Context, net.Conn) (net.Conn, error) {
	return func(ctx context.Context, c net.Conn) (net.Conn, error) {
		if d, ok := ctx.Deadline(); ok {
			c.SetDeadline(d)
			defer c.SetDeadline(time.Time{})
		}
		d := ws.Dialer{Protocols: []string{"SRMP"}}
		br, _, err := d.Upgrade(c, u)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", codec.ErrConnClosed, err)
		}
		if br == nil { // nothing came after the 101
			br = bufio.NewReaderSize(c, wsReadBuffer)
		}
		wt := cmp.Or(cfg.Transport.WriteTimeout, transport.DefaultWriteTimeout)
		return newWSConn(c, br, true, cfg.Framer.MaxFrame, cmp.Or(cfg.Framer.Expire, codec.DefaultExpire), wt), nil
	}
}

// wsReadBuffer is the size of a WebSocket client's reader: it holds frame
// headers and control frames; payloads are read into the transport's
// buffer.
const wsReadBuffer = 4 << 10
