package transport

// Hooks for the external tests (package transport_test).

// SetDatagramBuffer makes the UDP sockets that s serves from now on
// receive into buffers of n bytes instead of 64 KiB, so that a test can
// send a datagram that does not fit.
func SetDatagramBuffer(s *Server, n int) { s.slotSize = n }

// UDPReads returns how many receive calls of s's UDP sockets returned
// datagrams: one per batch.
func UDPReads(s *Server) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, u := range s.udp {
		n += u.reads.Load()
	}
	return n
}

// BurstEnded is burstEnded, for its table test.
var BurstEnded = burstEnded

// ParkingWave is parkingWave, for its table test.
var ParkingWave = parkingWave
