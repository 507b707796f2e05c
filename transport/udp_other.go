//go:build !linux

package transport

import (
	"net"
	"syscall"

	"github.com/lifenet/lifenet/packet"
)

// Elsewhere than Linux a UDP socket reads and writes one datagram per
// system call: the portable path.

func batchSocket(*net.UDPConn) (syscall.RawConn, int) { return nil, 0 }

func newBatchReader(*net.UDPConn, int) datagramReader { return nil }

func sendBatch(udpDest, []*packet.Packet) (int, bool, error) { return 0, false, nil }
