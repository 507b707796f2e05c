/*
Package rpc calls and serves named actions over NewLife.Remoting's wire
[NewLife ApiServer, ApiClient]: a Go [Server] answers NewLife clients, and
a Go [Client] calls NewLife servers, byte for byte (docs/PROTOCOL.md, §5).

# Layers

Three layers, each on the one before it:

  - transport owns the sockets: TCP, Unix, TLS and UDP sessions, their
    buffers, limits and timeouts ([transport.Config], [transport.ClientConfig]).
  - codec cuts a session's bytes into SRMP frames [NewLife DefaultMessage] and
    matches replies to requests by their sequence number
    ([codec.FramerConfig] bounds the frames).
  - rpc gives the frames their meaning: an action name and its arguments
    [NewLife ApiMessage], the actions a server registers [NewLife ApiManager], the
    per-connection [Session] [NewLife IApiSession], and the server's port's
    three protocols [NewLife ApiNetServer with HttpCodec and
    WebSocketServerCodec].

One port serves SRMP, HTTP and WebSocket. A TCP connection's first bytes
choose its stack once, for its life (as rpcx's cmux and Kitex's
detection do): SRMP stays with the transport and the SRMP framing; a
request line hands the connection to net/http, whose server answers its
HTTP requests and upgrades a WebSocket request (github.com/gobwas/ws),
after which its SRMP messages are served by the SRMP stack again. UDP
datagrams are SRMP. With [transport.Config.TLS] every connection is TLS
and the first bytes after the handshake choose.

# Actions

A server's actions are functions registered under a name
"Controller/Method". [Handle] registers a typed function
func(ctx, A) (R, error), the fast form; [Server.Register] registers the
exported methods of a value [NewLife Register<T>]; [HandleStream] registers
a function yielding items [NewLife: an action returning
IAsyncEnumerable<T>].
Names are looked up exactly, then in any case, then "Controller/*", then
"*". The built-in Api/All lists the signatures and Api/Info tells the
server's facts [NewLife ApiController], and Api/Health its serving status
(see [Config.NoBuiltins], [Config.AuthorizeBuiltins]).

Arguments come as one value: a struct binds from a JSON object by field
name, case-insensitively, with keys that name no field ignored and fields
no key names left at their zero value; a primitive binds from raw text or
from a one-entry object (the reserved keys aside, below); []byte gets the
raw data. Results go back as
NewLife encodes them: strings raw, numbers as text, bools True/False,
[]byte raw, anything else JSON.

# The life of a call

	rpc.Call(ctx, c, "Order/Get", args)
	  client: the interceptors (ClientConfig.Interceptors), the first outermost, then:
	  client: encode the body; merge in the token, the headers, the context's
	          metadata and trace context (and with SendTimeout its remaining time);
	          show the token if the body has no room for it
	  client: the SRMP request leaves with a free sequence number (1…255, 0)
	  server, the connection's reading goroutine: cut the frame, decode the body,
	          find the action
	  server: run it inline or on a goroutine of its own (below): read the
	          reserved keys (Token into the session, the trace context, the
	          deadline, the metadata) into the handler's context, then the
	          interceptors (Config.Interceptors, then Config.Authorize), then
	          the handler
	  server: the reply (or an error reply with a code) with the same number
	  client: match the number and the action name and decode the result:
	          a default client over plain TCP reads on the waiting callers'
	          goroutines (the one whose turn it is reads, and hands others
	          their replies); one with OnPush, interceptors, TLS, WebSocket
	          or a stream open reads on a goroutine of its own, which hands
	          the reply to the waiting caller

What runs where on the server: an unknown action (its 404) and an action
registered [WithInline] run on the connection's reading goroutine, and so
do all calls of a [Config.Serial] server [NewLife Multiplex=false] and, for
back-pressure, a call past [Config.MaxInFlight]; every other call runs on
a goroutine of its own [NewLife Multiplex=true], so replies leave as they are
ready. An HTTP call runs on its connection's net/http goroutine (HTTP/1.1
answers a connection's requests in order). Streams always run on their own goroutine (past
MaxInFlight they are refused with [ErrBusy]); UDP peers share their
listener's reading goroutine, so their calls are never run on it. A
handler's context is cancelled when its connection ends (an HTTP client
that leaves), the server closes, or the deadline its caller sent passes.
[Server.Shutdown] reports the server not serving, refuses new calls with
[ErrShutdown] and waits for those running.

On the client every method is safe for concurrent use: calls share the
connection (up to 255 in flight, matched by number; [ClientConfig.Conns]
spreads them over more connections). A call that finds its connection gone
dials again, failing over to the next server address. [Client.InvokeOneWay]
sends a request nobody answers [NewLife InvokeOneWay]; [Session.Push] and
[Server.PushAll] send one to a client, whose [ClientConfig.OnPush] gets it
on its reading goroutine [NewLife IApiSession.InvokeOneWay,
ApiServer.InvokeAll].

# Errors

A call's error tells where it came from; match it with errors.Is, or take
its code with [CodeOf] (connect-go's CodeOf).

  - The server answered with an error reply: an [*APIError] with its code
    and message [NewLife ApiException]. errors.Is matches it to its code's
    sentinel: [ErrArgs] 400, [ErrUnauthorized] 401 (a client with
    [ClientConfig.Login] logs in and retries once), [ErrForbidden] 403,
    [ErrNotFound] 404, [ErrTooLarge] 413, [ErrInternal] 500,
    [ErrUnavailable] 503 (with [ErrShutdown], [ErrNotServing] and [ErrBusy]),
    [ErrUnaryAction] and [ErrStreamAction] 400. An unknown action's 404
    keeps NewLife's text on the wire (无法找到名为[X]的服务！) and reads
    `rpc: no action "X" (404)` for the caller.
  - No reply in time: [ErrTimeout], whether the context's deadline or
    [ClientConfig.Timeout] (default [DefaultTimeout], 15 s) ended the
    wait; it matches context.DeadlineExceeded and is a net.Error whose
    Timeout is true. A cancelled context gives context.Canceled.
  - The connection ended with the call pending: [ErrConnClosed] (the
    server may have run it). One that never left is sent again once on a
    new connection ([ErrNotSent] only when that fails too). No server
    answering the dial: [ErrNoServer]. A closed client: [ErrClosed].
  - Refused before sending: [ErrTooLarge] (over the client's
    Framer.MaxFrame), [ErrSignature] (a name NewLife cannot carry),
    [ErrAddress].

A handler chooses its reply's code by returning [NewError] or an error
wrapping a sentinel (fmt.Errorf("%w: id must be positive", rpc.ErrArgs)):
the caller gets that code and text. Any other error, and a panic, is
answered with its code's generic text ("Internal Server Error") and logged
on the server with its detail, unless [Config.ExposeErrors] sends the text
as NewLife does.

# Per-connection state

Each connection (or UDP peer) of a server has a [Session], found from a
handler's context with [SessionFrom]: its addresses, its protocol
([Session.Protocol]: SRMP, HTTP, WebSocket, UDP), its TLS state
([Session.TLS]: the client's verified certificate chains under mutual
TLS), the last token the caller showed ([Session.Token]; a Token argument,
or an HTTP X-Token or Authorization: Bearer header), values the
application keeps ([Session.Set], [Session.Get]), and pushes. A client
sends its token ([ClientConfig.Token], [Client.SetToken]) with every call:
merged into an argument object, as an object of the token alone for a call
without arguments, and for a bare value, bytes or an array (which have no
room for it) shown once per connection first by a call of Api/Info; the
session keeps it for the calls after.

# Interceptors, call info and metadata

An [Interceptor] wraps every call, one-way call and stream of a server
([Config.Interceptors]) or a client ([ClientConfig.Interceptors]), and a
client's pushes: an access log, metrics, tracing, authorization, limits,
retries [NewLife IActionFilter]. It sees the call's action, its arguments
(as they go on the wire, and bound on demand), its result or error, and
may answer in its place. [Config.Authorize] is one, the innermost. With
none installed a call costs what it did (docs/perf/rpc.md, "Interceptors").
[AccessLog] is the package's access log, a log/slog line per call; an
interceptor sees a stream's items through [Invocation.OnItem]. To measure
calls without changing them, [Config.OnCallDone] gets a [CallEvent] after
each (action, code, duration, sizes) at a third of an interceptor's cost.

A handler's context carries the call ([CallInfoFrom]): its action and
kind, session, token, metadata, deadline and trace context. NewLife has no
header block: what a call carries besides its arguments rides in its
argument object under reserved keys (docs/PROTOCOL.md §5.2a) [NewLife
ApiClient.Token, Headers; ISpan.Attach], which a server counts out when it
binds a primitive parameter from an object's one entry:

  - Token: the session's token.
  - traceparent (and NewLife's TraceId, Request-Id, Eagleeye-Traceid): a
    [TraceContext] ([TraceContextFrom]); a client sends its context's
    ([WithTraceContext]), so a handler's calls continue its caller's
    trace. NewLife's 30-character trace IDs are taken as they are.
    lifenet keeps no spans: an OpenTelemetry interceptor starts them.
  - Timeout-Ms: with [ClientConfig.SendTimeout], the caller's remaining
    time; the handler's context ends then (SRMP has no other way to
    cancel a call).
  - the keys of [Config.MetadataKeys]: [CallInfo.Metadata]; a client
    sends its context's [AppendToOutgoingContext] pairs as NewLife sends
    its Headers.

# Health

The built-in Api/Health answers "Serving", or 503 [ErrNotServing], to
anyone ([Config.Authorize] never guards it), and so does GET /healthz on
the HTTP form (200, 503): for load balancers. [Server.SetServing] flips it
(draining, warming up); Shutdown turns it off first.

# Wire forms

One port serves three protocols, told apart by the connection's first
bytes: raw SRMP, HTTP/1.1, and SRMP inside WebSocket (subprotocol SRMP).
An RPC message is an SRMP frame of flag 1 [NewLife DataKinds.Packet] whose
payload is

	request, one-way, reply: [varint nameLen][name] ([int32 LE dataLen][data])?
	error reply:             [varint nameLen][name] [int32 LE code] ([int32 LE dataLen][data])?

A reply repeats the action name; a stream answers one request with a reply
per item and ends with a reply of the name alone (the replies of a lifenet
server's stream carry SRMP.MD's Streaming flag bit, 0x20, as does a
lifenet client's stream request). Over HTTP an action is a path (GET with
a query, POST with a JSON or form body), answered
{"action":…,"code":…,"data":…} (or the bare value with
[Config.UseHTTPStatus]) and, for a stream, server-sent events. With
[transport.Config.TLS] set, the port serves all three over TLS. The client
dials tcp://, tls://, udp://, ws://, wss://, http:// and https:// addresses
([Dial]), over TLS with its ClientConfig.Transport's TLS config.
*/
package rpc
