// Package codec turns a transport connection's bytes into messages and
// back (NewLife's pipeline and codecs): SRMP, NewLife's "standard" frame
// (StandardCodec), the length-field format (LengthFieldCodec) and
// delimited lines (SplitDataCodec), with requests matched to their replies
// — by sequence number for SRMP, in order for the formats without ids.
//
// A [Server] ([NewServer]) and a [Client] (Dial) run a [Pipeline] on each
// connection: a framing stage first, then any handlers of the
// application's own. Inbound messages reach Options.Handler; the handler
// answers with [Conn.Reply] (SRMP) or [Conn.Write]. The wire formats are
// written down in docs/PROTOCOL.md.
//
// # Ownership
//
// Reads lend, writes give. A message the handler gets is borrowed: it is a
// view of the connection's receive buffer, valid until the handler
// returns, and needs no release. A handler that keeps a message or its
// payload past the call calls [Message.Keep], [Message.TakePayload] or
// packet.Packet.Keep (a copy when small, a share of the receive buffer when
// large). Whatever is given to Write, Reply and Request belongs to the
// connection from then on, including on error; a borrowed message may be
// given, and is copied or kept as needed. Replies a Request returns are
// owned by its caller; replies a RequestAsync callback gets are borrowed.
//
// # Cost
//
// A frame that lies whole in one read reaches its handler without a copy
// or a buffer from a pool; a small reply is copied once, header and payload
// together, into the connection's send buffer, and the replies to all the
// frames of one read leave in one write. A small reply to the message the
// handler was lent — [Conn.Reply] or [Conn.ReplyError] naming the lent
// request, or Conn.Write of the lent length-field payload itself (an echo,
// or the frame changed in place) — takes no lock: it can only come from the
// handler's call, so it goes into a buffer only that call and the reader
// touch.
//
// # Order
//
// Writes through a Conn leave in the order they were made. While replies
// of a read are buffered, every other write (from the handler or any other
// goroutine) waits behind them and goes out with them when the read's
// frames are done; such writes are bounded (4 MiB besides one write of any
// size: past that a write fails with [ErrBacklogFull]), so a handler that
// writes much besides its reply should reply last. The replies buffered
// may be an earlier frame's of the same read: then a handler that has not
// replied waits behind them too, and so do other goroutines' writes (a
// push) while it runs; where nothing is buffered, writes go as outside a
// read, except a small Write or Reply, which joins the read's replies (so
// a reply from another goroutine waits for a handler that blocks), and a
// push made while other writes wait, which waits with them. A push never
// waits for the peer itself. A write that waits reports the bound and a
// session already closed; its wait for the session's room comes when it
// is handed over, bounded by the session's stall timeout, not by the
// writer's context.
//
// # Concurrency
//
// Server, Client, [Conn] and Pipeline are safe for concurrent use. A
// connection's handler runs on its reading goroutine, one message at a
// time; requests, replies and writes may come from any goroutine.
package codec
