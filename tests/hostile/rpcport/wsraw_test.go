package rpcport_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// A WebSocket client written here from RFC 6455, apart from the server's
// own code (rpc/internal/ws), so that the battery checks the server against
// the RFC rather than against itself.

// WebSocket opcodes (RFC 6455 §5.2).
const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// wsKey is the Sec-WebSocket-Key of every handshake (RFC 6455 §1.3's
// example) and wsAccept the answer it must get.
const wsKey = "dGhlIHNhbXBsZSBub25jZQ=="

var wsAccept = func() string {
	h := sha1.Sum([]byte(wsKey + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}()

// wsMask is the masking key of the frames the battery sends.
var wsMask = [4]byte{0x37, 0xFA, 0x21, 0x3D}

// wsOpen sends the opening handshake (subprotocol SRMP) on rc and checks
// the 101.
func (rc *raw) wsOpen() error {
	req := "GET / HTTP/1.1\r\nHost: rpcport\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + wsKey + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: SRMP\r\n\r\n"
	if err := rc.write([]byte(req)); err != nil {
		return err
	}
	rc.deadline(patience)
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept {
		return fmt.Errorf("handshake answered %s, accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return nil
}

// wsHeader is a frame header: b0 (FIN, RSV bits and opcode as given) and a
// masked payload length n, in its minimal form.
func wsHeader(b0 byte, n uint64) []byte {
	h := []byte{b0, 0x80}
	switch {
	case n > 0xFFFF:
		h[1] |= 127
		h = binary.BigEndian.AppendUint64(h, n)
	case n > 125:
		h[1] |= 126
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h[1] |= byte(n)
	}
	return append(h, wsMask[:]...)
}

// wsFrame is a whole masked frame: b0 then payload.
func wsFrame(b0 byte, payload []byte) []byte {
	f := wsHeader(b0, uint64(len(payload)))
	start := len(f)
	f = append(f, payload...)
	for i := range f[start:] {
		f[start+i] ^= wsMask[i%4]
	}
	return f
}

// wsMsg is a whole binary message in one frame.
func wsMsg(payload []byte) []byte { return wsFrame(0x80|opBinary, payload) }

// wsClose is a close frame with code and reason.
func wsClose(code uint16, reason string) []byte {
	return wsFrame(0x80|opClose, append(binary.BigEndian.AppendUint16(nil, code), reason...))
}

// wsIn is a frame from the server.
type wsIn struct {
	fin     bool
	op      byte
	payload []byte
}

// closeCode is a close frame's status code (0 for an empty one).
func (f wsIn) closeCode() uint16 {
	if f.op != opClose || len(f.payload) < 2 {
		return 0
	}
	return binary.BigEndian.Uint16(f.payload)
}

// readWS reads one frame from the server, which must not mask it.
func (rc *raw) readWS() (wsIn, error) {
	rc.deadline(patience)
	var h [2]byte
	if _, err := io.ReadFull(rc.r, h[:]); err != nil {
		return wsIn{}, err
	}
	if h[1]&0x80 != 0 {
		return wsIn{}, errors.New("the server masked a frame")
	}
	if h[0]&0x70 != 0 {
		return wsIn{}, errors.New("the server set RSV bits")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(rc.r, b[:]); err != nil {
			return wsIn{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(rc.r, b[:]); err != nil {
			return wsIn{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 64<<20 {
		return wsIn{}, fmt.Errorf("a frame of %d bytes from the server", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(rc.r, p); err != nil {
		return wsIn{}, err
	}
	return wsIn{fin: h[0]&0x80 != 0, op: h[0] & 0x0F, payload: p}, nil
}

// readWSClose reads frames until a close, which it returns, skipping the
// data frames and pongs before it.
func (rc *raw) readWSClose() (wsIn, error) {
	for {
		f, err := rc.readWS()
		if err != nil || f.op == opClose {
			return f, err
		}
	}
}

// wsCall sends an SRMP request in one binary message and reads its reply
// message.
func (rc *raw) wsCall(seq byte, body []byte) (reply, error) {
	if err := rc.write(wsMsg(srmpFrame(b0Request, seq, body))); err != nil {
		return reply{}, err
	}
	for {
		f, err := rc.readWS()
		if err != nil {
			return reply{}, err
		}
		if f.op != opBinary {
			continue // a pong for an earlier ping
		}
		m, err := readSRMP(bytes.NewReader(f.payload))
		if err != nil {
			return reply{}, err
		}
		if m.seq != seq {
			return reply{}, fmt.Errorf("reply to sequence %d, want %d", m.seq, seq)
		}
		return parseReply(m)
	}
}
