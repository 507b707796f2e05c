package rpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

func TestStaticResolverReportsOnceAndWaits(t *testing.T) {
	list := rpc.StaticResolver{{Addr: "127.0.0.1:1", Weight: 2}, {Addr: "127.0.0.1:2"}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var got [][]rpc.Endpoint
	err := list.Watch(ctx, func(eps []rpc.Endpoint) { got = append(got, eps) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Watch = %v, want the context's error", err)
	}
	if len(got) != 1 || len(got[0]) != 2 || got[0][0].Addr != "127.0.0.1:1" || got[0][0].Weight != 2 {
		t.Fatalf("updates = %+v, want the list once", got)
	}
	got[0][0].Addr = "changed" // the update owns its slice
	if list[0].Addr != "127.0.0.1:1" {
		t.Fatal("the update's slice aliases the resolver's list")
	}
}

func TestStaticResolverEmptyFails(t *testing.T) {
	err := rpc.StaticResolver{}.Watch(context.Background(), func([]rpc.Endpoint) { t.Error("update called") })
	if !errors.Is(err, rpc.ErrNoEndpoints) {
		t.Fatalf("Watch = %v, want ErrNoEndpoints", err)
	}
}

// Endpoint.Validate takes what Dial can dial, one server, and nothing
// else; its errors wrap ErrAddress and do not quote an address past
// MaxEndpointAddr.
func TestEndpointValidate(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1:80", "tcp://h:1", "tls://h:443", "udp://[::1]:9", "ws://h", "ws://h:8080/path",
		"wss://h/p", "http://h", "https://h:8443/prefix", "h:65535", "[::1]:1",
		strings.Repeat("h", rpc.MaxEndpointAddr-2) + ":1",
	} {
		if err := (rpc.Endpoint{Addr: a}).Validate(); err != nil {
			t.Errorf("Validate(%.40q): %v, want nil", a, err)
		}
	}
	for _, a := range []string{
		"", "unix:///etc/passwd", "udp://", "ws://", "http://", "file:///x", "tcp://h", "h", "h:0", "h:65536",
		"h:-1", "tcp://:80", ":80", "a:1,b:2", "h :1", "h:1\n", "tcp://h:1\r\nX: y", "\x00h:1",
		strings.Repeat("h", rpc.MaxEndpointAddr-1) + ":1", strings.Repeat("a", 100<<10),
	} {
		err := (rpc.Endpoint{Addr: a}).Validate()
		if !errors.Is(err, rpc.ErrAddress) {
			t.Errorf("Validate(%.40q): %v, want rpc.ErrAddress", a, err)
			continue
		}
		if len(err.Error()) > rpc.MaxEndpointAddr+200 {
			t.Errorf("Validate of a %d-byte address: an error of %d bytes", len(a), len(err.Error()))
		}
	}
}
