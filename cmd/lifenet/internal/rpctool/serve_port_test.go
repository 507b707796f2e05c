package rpctool

import (
	"net"
	"testing"
)

// serve --port 0 with UDP takes a port free for both TCP and UDP: the
// kernel's free TCP port was, now and then, another process's UDP one
// (CI: "listen udp 127.0.0.1:46553: bind: address already in use"). A
// port whose UDP side is taken is passed over.
func TestFreeForBothTakesAPortFreeForTCPAndUDP(t *testing.T) {
	var held []net.PacketConn // UDP sockets on ports the kernel hands out for TCP: the clash, made more likely
	defer func() {
		for _, u := range held {
			u.Close()
		}
	}()
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u, err := net.ListenPacket("udp", l.Addr().String())
		l.Close()
		if err == nil {
			held = append(held, u)
		}
	}
	for range 300 { // a naive pick clashes about 2 % of the time here
		a, err := freeForBoth("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("TCP on %s: %v", a, err)
		}
		u, err := net.ListenPacket("udp", a)
		l.Close()
		if err != nil {
			t.Fatalf("UDP on %s: %v", a, err)
		}
		u.Close()
	}
}
