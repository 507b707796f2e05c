package serve_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// peerHeapBound is what one idle UDP peer of a codec server may hold on
// the heap. Peers are made by datagrams from forgeable source addresses,
// so MaxUDPPeers times this is what a flood can make a server keep: at
// the default MaxUDPPeers (65,536), 8 KiB a peer is 512 MiB, twice the
// default MaxPartialBytes.
const peerHeapBound = 8 << 10

// A UDP peer of a codec server costs a bounded, small amount of heap
// (the flood of item 10 multiplies it by MaxUDPPeers).
func TestUDPPeerHeapCost(t *testing.T) {
	leakcheck.Check(t)
	const peers = 1000
	srv, addr := startCodec(t, transport.Config{MaxUDPPeers: 2 * peers},
		codec.Options{Pipeline: srmpPipeline(floodMaxFrame), Handler: echo}, "udp")
	to := netip.MustParseAddrPort(addr)
	srcs := openSources(t, peers, to)
	var readers sync.WaitGroup
	for _, s := range srcs {
		readers.Go(s.read)
	}
	defer func() {
		for _, s := range srcs {
			s.conn.Close()
		}
		readers.Wait()
	}()
	base := heapAfterGC()
	buf := make([]byte, floodMaxFrame)
	for j := range buf[4:] {
		buf[4+j] = byte(j)
	}
	buf[0] = floodRequest
	// Datagrams sent in a burst overflow the server's socket buffer: send
	// again, a few at a time, to the sources not answered yet.
	waitFor(t, "every source's reply", func() bool {
		missing := 0
		for _, s := range srcs {
			if s.replies.Load() == 0 {
				if missing++; missing <= 100 {
					s.sendRequest(t, buf, to)
				}
			}
		}
		if missing > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		return missing == 0
	})
	live := srv.Transport().SessionCount()
	grown := heapAfterGC() - base
	per := int(grown) / peers
	t.Logf("%d UDP peers live: heap grew %.2f MiB, %d bytes a peer (bound %d); at the default MaxUDPPeers %d that is %.0f MiB",
		live, mib(grown), per, peerHeapBound, transport.DefaultMaxUDPPeers, float64(per)*transport.DefaultMaxUDPPeers/(1<<20))
	if live != peers {
		t.Fatalf("%d sessions live, want %d", live, peers)
	}
	if per > peerHeapBound { // codec's request matcher (~18 KiB) once cost this much per peer
		t.Fatalf("a UDP peer holds %d bytes of heap, past %d", per, peerHeapBound)
	}
}

// sendRequest sends the source's well-formed request (buf holds the
// pattern) once.
func (s *floodSource) sendRequest(t *testing.T, buf []byte, to netip.AddrPort) {
	t.Helper()
	buf[1] = 1
	buf[2], buf[3] = byte(s.reqSize-4), byte((s.reqSize-4)>>8)
	if _, err := s.conn.WriteToUDPAddrPort(buf[:s.reqSize], to); err != nil {
		t.Fatal(err)
	}
}
