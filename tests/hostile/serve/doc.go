// Package serve holds no code: its tests are items 10, 11 and 12 of the
// standing hostile battery of issue 13, run at the scale against
// the public APIs of transport, codec and rpc over loopback sockets.
//
//   - Item 10, UDP flood (udp_flood_test.go): 2,000 source ports, a fifth
//     of their datagrams larger than the codec's MaxFrame, beside a
//     legitimate echo client at 1,000 requests a second, against a
//     codec.Server listening on UDP and TCP with a small MaxUDPPeers. At
//     least 95 % of the legitimate echoes are answered, TCP connections are
//     accepted and served during and after the flood, no source gets a
//     reply larger than its request, and the heap stays bounded.
//     TestUDPPeerHeapCost measures what one idle UDP peer holds (the flood
//     multiplies it by MaxUDPPeers).
//   - Item 11, handler panics (panic_test.go): 10,000 requests of which
//     one in ten panics, against a codec.Server handler (each panic ends
//     its connection with a *transport.PanicError; the client reconnects)
//     and rpc.Server actions (each panic is a 500 reply and a count in
//     Stats().Panics; the connection stays). Every other request is served.
//     TestCodecHandlerPanicEndsThePipeline shows what one panic costs a
//     client that pipelines requests on one connection.
//   - Item 12, graceful and hard stop (stop_test.go): 500 requests in
//     flight, blocked in rpc actions or codec handlers. Shutdown completes
//     all 500 and refuses new work; Close fails all 500 at once with
//     codec.ErrConnClosed.
//
// Every test checks for leaked goroutines and pooled buffers
// (internal/leakcheck), so the tests of this package run one at a time.
// The UDP flood runs 10 s at 5,000 datagrams a second, or 4 s at 1,500
// under the race detector and 2 s at 1,500 with -short.
package serve
