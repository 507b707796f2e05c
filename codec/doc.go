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
// frames of one read leave in one write (the transport holds the writes
// made while a read is handled and writes them together when it is done).
//
// # Order
//
// Writes through a Conn leave in the order they were made: every write,
// from the handler or any other goroutine, goes to the transport session's
// one send queue. A push ([Conn.Enqueue]) never waits for the peer. Inside
// [Conn.Batch], small asynchronous SRMP requests wait in the batch's
// buffer and join that queue before the connection's next other write, so
// the order holds there too (a write straight to [Conn.Session] may pass
// them). Replies, and the messages the handler gets, are handled in the
// order they came: the replies of one read are matched together, then
// their callbacks run in turn.
//
// # Concurrency
//
// Server, Client, [Conn] and Pipeline are safe for concurrent use. A
// connection's handler runs on its reading goroutine, one message at a
// time; requests, replies and writes may come from any goroutine.
package codec
