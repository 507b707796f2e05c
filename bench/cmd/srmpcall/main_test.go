package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/baseline"
)

func TestRequest(t *testing.T) {
	// SRMP request, flag 1, sequence 1, 12 bytes; name length 11, "Bench/NoArg" (no data: lifenet's client sends none).
	want := "01010c00" + "0b" + hex.EncodeToString([]byte("Bench/NoArg"))
	if got := hex.EncodeToString(request("Bench/NoArg")); got != want {
		t.Fatalf("request = %s, want %s", got, want)
	}
}

func TestValidAction(t *testing.T) {
	for a, want := range map[string]bool{
		"Bench/NoArg": true, "": false, "a b": false, "é": false,
		strings.Repeat("a", 127): true, strings.Repeat("a", 128): false,
	} {
		if got := validAction(a); got != want {
			t.Errorf("validAction(%q) = %v, want %v", a, got, want)
		}
	}
}

// chunks is a connection whose reads return the parts given, one per read.
type chunks struct {
	net.Conn
	parts [][]byte
}

func (c *chunks) Read(b []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.parts[0])
	c.parts = c.parts[1:]
	return n, nil
}

func TestReadFrame(t *testing.T) {
	frame := request("Bench/NoArg")
	buf := make([]byte, 64)
	for split := range len(frame) + 1 {
		c := &chunks{parts: [][]byte{frame[:split], frame[split:]}}
		if err := readFrame(c, buf); err != nil {
			t.Fatalf("split at %d: %v", split, err)
		}
	}
	c := &chunks{parts: [][]byte{append(bytes.Clone(frame), 0x01)}}
	if err := readFrame(c, buf); err == nil || !strings.Contains(err.Error(), "more than one frame") {
		t.Fatalf("a byte past the reply: %v", err)
	}
	c = &chunks{parts: [][]byte{frame[:7]}}
	if err := readFrame(c, buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut reply: %v, want io.ErrUnexpectedEOF", err)
	}
	c = &chunks{parts: [][]byte{{0xC1, 0x01, 0x01, 0x00, 0x00}}}
	if err := readFrame(c, buf); err == nil || !strings.Contains(err.Error(), "error reply") {
		t.Fatalf("an error reply: %v", err)
	}
	c = &chunks{parts: [][]byte{{0x81, 0x01, 0xff, 0xff, 0, 0, 1, 0}}}
	if err := readFrame(c, buf); err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Fatalf("a reply larger than the buffer: %v", err)
	}
}

// TestRunAgainstEcho: run counts calls against a std echo server and
// reports them.
func TestRunAgainstEcho(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := baseline.Serve(ln, true) // the std echo that floor.sh's raw run serves
	defer srv.Close()
	s, err := run(ln.Addr().String(), 3, 50*time.Millisecond, 200*time.Millisecond, request("Bench/NoArg"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Conns != 3 || s.Calls == 0 || s.CallsPerSec <= 0 || s.P50Us <= 0 {
		t.Fatalf("summary %+v: want calls counted", s)
	}
}
