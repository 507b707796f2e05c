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

// mmsgSender batches nothing here: add declines every destination, so
// udpReplies (never made without a RawConn anyway) would send each
// session's datagrams one by one.
type mmsgSender struct{}

func newMmsgSender() *mmsgSender { return new(mmsgSender) }

func (*mmsgSender) add(udpDest, []*packet.Packet) int { return -1 }
func (*mmsgSender) sendAll(syscall.RawConn) error     { return nil }
func (*mmsgSender) result(int, error) (int, error)    { return 0, nil }
func (*mmsgSender) reset()                            {}
