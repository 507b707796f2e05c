// Package transport provides lifenet's TCP, UDP and Unix-socket servers and
// clients (NewLife NetServer, TcpSession, UdpServer, NetClient): sessions
// with a per-session state bag, a receive loop that reuses one pooled buffer
// per connection, coalesced vectored writes behind a bounded send queue,
// connection limits, idle and first-byte timeouts, TLS, and graceful
// shutdown. Every session ends with a named [Reason], and every reason has a
// counter in Stats.
//
// Received bytes are delivered as *packet.Packet views of the connection's
// receive buffer. A handler that needs them after it returns keeps a share
// (p.Share()) or a copy (p.Clone()) and releases it later; the receive loop
// then reads into a fresh pooled buffer, otherwise it reuses the same one, so
// the steady state allocates nothing per read.
package transport
