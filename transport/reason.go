package transport

import (
	"errors"
	"fmt"
	"io"
)

// Reason names why a session ended. Each has a counter in Stats.
type Reason uint8

// Close reasons.
const (
	ReasonNone         Reason = iota // still open
	ReasonPeerClosed                 // the peer closed the connection (EOF, reset) or sent a zero-length datagram
	ReasonLocal                      // the application called Close
	ReasonIdle                       // nothing received within IdleTimeout
	ReasonFirstByte                  // nothing received within FirstByteTimeout of connecting
	ReasonSlowConsumer               // the send queue stayed full without progress (SendStallTimeout), or Enqueue passed twice SendQueueBytes
	ReasonWriteTimeout               // a write did not finish within WriteTimeout
	ReasonLimit                      // refused at MaxConns or MaxConnsPerIP, or a UDP peer evicted at MaxUDPPeers
	ReasonError                      // a read or write failed
	ReasonShutdown                   // the server or client was shut down
	ReasonProtocol                   // the peer broke the protocol (bad frame, frame too large, expired partial frame)
	ReasonHandedOff                  // handed to another server by Hooks.Route (RouteHandOff): the connection lives on there
	numReasons
)

var reasonNames = [numReasons]string{
	"open", "peer closed", "local close", "idle timeout", "first-byte timeout",
	"slow consumer", "write timeout", "connection limit", "error", "shutdown", "protocol violation", "handed off",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// peerGone reports whether a failed read or write says the peer closed or
// reset the connection (peerReset, or an in-memory pipe's other end
// closed): ReasonPeerClosed, whichever side notices first.
func peerGone(err error) bool { return peerReset(err) || errors.Is(err, io.ErrClosedPipe) }
