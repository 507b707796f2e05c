//go:build !(linux || darwin)

package transport

import (
	"context"

	"github.com/lifenet/lifenet/packet"
)

// exchange is empty where a socket cannot be read without waiting.
type exchange struct{}

// exchangeNow never runs the exchange here: Exchange takes three steps.
func (c *Client) exchangeNow(context.Context, Exchanger) (*packet.Packet, bool, error) {
	return nil, false, nil
}
