package wstest

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// acceptGUID is the GUID RFC 6455 §1.3 appends to Sec-WebSocket-Key.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// IsUpgrade reports whether r is a WebSocket opening handshake (RFC 6455
// §4.2.1) the server may accept: method GET, a Connection header with the
// token "upgrade" and an Upgrade header with the token "websocket" (both
// case-insensitive, among comma-separated tokens, over all header lines), and
// a non-empty Sec-WebSocket-Key. Sec-WebSocket-Version must be 13 when
// present; an absent version is accepted for lenient clients. The key's
// format, Origin, Host and the HTTP version are not checked. IsUpgrade does
// not modify or retain r.
func IsUpgrade(r *http.Request) bool { return asksUpgrade(r) && versionOK(r) }

// WantsOtherVersion reports whether r asks for a WebSocket upgrade in a
// version other than 13, which a server answers 426 with
// Sec-WebSocket-Version: 13 (RFC 6455 §4.4).
func WantsOtherVersion(r *http.Request) bool { return asksUpgrade(r) && !versionOK(r) }

// asksUpgrade reports whether r is a GET with the upgrade's headers and a
// key, whatever its version.
func asksUpgrade(r *http.Request) bool {
	return r != nil && r.Method == http.MethodGet && hasToken(r.Header, "Connection", "upgrade") &&
		hasToken(r.Header, "Upgrade", "websocket") && r.Header.Get("Sec-WebSocket-Key") != ""
}

// versionOK reports whether every Sec-WebSocket-Version of r is 13 (none
// is taken as 13, as NewLife's clients send none).
func versionOK(r *http.Request) bool {
	for _, v := range r.Header.Values("Sec-WebSocket-Version") {
		if strings.TrimSpace(v) != "13" {
			return false
		}
	}
	return true
}

// hasToken reports whether any line of header name in h holds token among
// its comma-separated, case-insensitive tokens.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.Trim(t, " \t"), token) {
				return true
			}
		}
	}
	return false
}

// AcceptKey returns the Sec-WebSocket-Accept value for the client's
// Sec-WebSocket-Key key: base64 of the SHA-1 of key followed by the RFC 6455
// GUID. key is used exactly as given.
func AcceptKey(key string) string {
	sum := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// AppendAccept appends to dst the complete 101 response accepting the
// handshake r and returns the extended slice. The response is, in this order:
//
//	HTTP/1.1 101 Switching Protocols\r\n
//	Upgrade: websocket\r\n
//	Connection: Upgrade\r\n
//	Sec-WebSocket-Accept: <AcceptKey of r's Sec-WebSocket-Key>\r\n
//	Sec-WebSocket-Protocol: <protocol>\r\n   (only if protocol != "")
//	\r\n
//
// protocol should be one of the subprotocols r offered; control characters
// in it are dropped so the response stays well-formed. The caller should
// have checked r with IsUpgrade. AppendAccept does not retain r or dst.
func AppendAccept(dst []byte, r *http.Request, protocol string) []byte {
	dst = append(dst, "HTTP/1.1 101 Switching Protocols\r\n"+
		"Upgrade: websocket\r\n"+
		"Connection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "...)
	dst = append(dst, AcceptKey(r.Header.Get("Sec-WebSocket-Key"))...)
	dst = append(dst, "\r\n"...)
	if protocol != "" {
		dst = append(dst, "Sec-WebSocket-Protocol: "...)
		dst = appendClean(dst, protocol, false)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// NewKey returns a new Sec-WebSocket-Key: 16 bytes read from rand (normally
// crypto/rand.Reader), base64-encoded. A read error is returned wrapped
// together with ErrHandshake.
func NewKey(rand io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", fmt.Errorf("%w: reading key: %w", ErrHandshake, err)
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// AppendRequest appends to dst a client opening handshake and returns the
// extended slice. The request is, in this order:
//
//	GET <path> HTTP/1.1\r\n                 (path "" is sent as "/")
//	Host: <host>\r\n
//	Upgrade: websocket\r\n
//	Connection: Upgrade\r\n
//	Sec-WebSocket-Key: <key>\r\n
//	Sec-WebSocket-Version: 13\r\n
//	Sec-WebSocket-Protocol: <protocol>\r\n  (only if protocol != "")
//	\r\n
//
// path must already be a request target (escaped, starting with "/"); key
// should come from NewKey. Control characters in every value, and spaces in
// path, are dropped so the request stays well-formed.
func AppendRequest(dst []byte, host, path, key, protocol string) []byte {
	if path == "" {
		path = "/"
	}
	dst = append(dst, "GET "...)
	dst = appendClean(dst, path, true)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = appendClean(dst, host, false)
	dst = append(dst, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "...)
	dst = appendClean(dst, key, false)
	dst = append(dst, "\r\nSec-WebSocket-Version: 13\r\n"...)
	if protocol != "" {
		dst = append(dst, "Sec-WebSocket-Protocol: "...)
		dst = appendClean(dst, protocol, false)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// appendClean appends s to dst without ASCII control characters (tab is
// kept unless noSpace) and, if noSpace, without spaces.
func appendClean(dst []byte, s string, noSpace bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x7f, c < 0x20 && c != '\t':
			continue
		case noSpace && (c == ' ' || c == '\t'):
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// CheckResponse checks the server's answer to a handshake sent with key
// (RFC 6455 §4.2.2): status 101, an Upgrade header with the token
// "websocket", a Connection header with the token "upgrade", a
// Sec-WebSocket-Accept equal to AcceptKey(key), and no
// Sec-WebSocket-Extensions (none is ever requested). The selected
// subprotocol, if any, is left to the caller. Every error wraps ErrHandshake
// and names the offending header. CheckResponse does not read resp.Body.
func CheckResponse(resp *http.Response, key string) error {
	if resp == nil {
		return fmt.Errorf("%w: no response", ErrHandshake)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("%w: status %q, want 101 Switching Protocols", ErrHandshake, resp.Status)
	}
	if !hasToken(resp.Header, "Upgrade", "websocket") {
		return fmt.Errorf("%w: Upgrade header %q, want websocket", ErrHandshake, resp.Header.Get("Upgrade"))
	}
	if !hasToken(resp.Header, "Connection", "upgrade") {
		return fmt.Errorf("%w: Connection header %q, want Upgrade", ErrHandshake, resp.Header.Get("Connection"))
	}
	if got, want := resp.Header.Get("Sec-WebSocket-Accept"), AcceptKey(key); got != want {
		return fmt.Errorf("%w: Sec-WebSocket-Accept %q, want %q", ErrHandshake, got, want)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		return fmt.Errorf("%w: unrequested Sec-WebSocket-Extensions %q", ErrHandshake, ext)
	}
	return nil
}
