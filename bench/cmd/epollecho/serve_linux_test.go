package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestEcho: bytes come back as sent, over connections dealt to both loops,
// and closing the listener stops serve.
func TestEcho(t *testing.T) {
	for _, spin := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- serve(ln, 2, spin) }()
		for i := range 3 {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			msg := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
			for range 3 {
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("spin=%v conn %d: got %q, %v; want %q", spin, i, got, err, msg)
				}
			}
			c.Close()
		}
		ln.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("serve did not return after the listener closed")
		}
	}
}
