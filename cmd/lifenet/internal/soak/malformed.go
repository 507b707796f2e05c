package soak

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Bad SRMP frames: a request header whose long length field is negative
// (a corrupt frame) or 2³¹−1, far past the 10 MiB frame limit. Either must
// make the server close the connection at once, without waiting for the
// bytes the header announces.
var (
	frameNegative = []byte{0x01, 0x01, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x80}
	frameOversize = []byte{0x01, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}
)

// closeWait bounds how long a malformed frame's connection may stay open.
const closeWait = 10 * time.Second

// sendMalformed dials addr on a plain socket, sends a bad frame and waits
// for the server to close the connection: MalformedShut when it does,
// MalformedAlive when it answers or stays open, DialError when the dial
// fails.
func sendMalformed(addr string, oversize bool) (Kind, error) {
	c, err := net.DialTimeout("tcp", addr, dialDeadline)
	if err != nil {
		return DialError, err
	}
	defer c.Close()
	frame := frameNegative
	if oversize {
		frame = frameOversize
	}
	_ = c.SetDeadline(time.Now().Add(closeWait))
	if _, err := c.Write(frame); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return MalformedAlive, err
		}
		return MalformedShut, nil // the server closed first (reset)
	}
	var b [64]byte
	n, err := c.Read(b[:])
	switch {
	case n > 0:
		return MalformedAlive, fmt.Errorf("soak: the server answered a malformed frame with %d bytes (% x)", n, b[:n])
	case errors.Is(err, os.ErrDeadlineExceeded):
		return MalformedAlive, fmt.Errorf("soak: connection still open %v after a malformed frame", closeWait)
	case err != nil:
		return MalformedShut, nil // io.EOF or a reset: closed
	}
	return MalformedAlive, errors.New("soak: empty read without an error")
}
