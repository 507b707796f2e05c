package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// ObserveServer registers observable instruments reading srv's counters
// (rpc.Server.Stats, its transport's Stats and SendQueues) each time mp's
// readers collect: nothing is done per call or per connection. A
// collection visits every session (the calls in flight) and takes each
// session's lock in turn (the send queues' state), a cost per scrape. Unregister the returned registration when the server
// is gone. mp nil means the global meter provider.
func ObserveServer(srv *rpc.Server, mp metric.MeterProvider) (metric.Registration, error) {
	m := meter(mp)
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	sessions := gauge("lifenet.server.sessions", "{session}", "Sessions open now: connections and UDP peers.")
	maxSessions := gauge("lifenet.server.sessions.max", "{session}", "The most sessions open at once since the server started.")
	accepted := counter("lifenet.server.sessions.accepted", "{session}", "Sessions opened: TCP and Unix accepts, new UDP peers.")
	closed := counter("lifenet.server.sessions.closed", "{session}", "Sessions ended, by close reason.")
	io := counter("lifenet.server.io", "By", "Payload bytes received and written.")
	msgs := counter("lifenet.server.messages", "{message}", "Messages received and written.")
	dgDropped := counter("lifenet.server.datagrams.dropped", "{datagram}", "UDP datagrams dropped: no session could take them, or the OS cut them short.")
	overflows := counter("lifenet.server.send_queue.overflows", "{send}", "Sends refused because a session's send queue was full.")
	dropped := counter("lifenet.server.requests.dropped", "{request}", "Requests dropped unanswered: a bad body, an empty or non-ASCII action.")
	panics := counter("lifenet.server.panics", "{panic}", "Handler and interceptor panics, each answered with a 500.")
	udpPeers := gauge("lifenet.server.udp.peers", "{peer}", "UDP peers with a session now (counted in lifenet.server.sessions too).")
	queued := gauge("lifenet.server.send_queue.messages", "{message}", "Messages waiting in the sessions' send queues, not yet taken by a write.")
	queuedBytes := gauge("lifenet.server.send_queue.usage", "By", "Bytes not yet written to the peers: queued, and left of the writes in progress.")
	waiting := gauge("lifenet.server.send_queue.waiting", "{send}", "Senders blocked waiting for room in a full send queue.")
	readBufs := gauge("lifenet.server.read_buffer.usage", "By", "Pooled receive buffers the transport holds: one per connection, a batch per UDP socket.")
	inFlight := gauge("lifenet.server.calls.in_flight", "{call}", "Calls and streams the server runs now, on goroutines of their own or on the connections' reading goroutines.")
	partial := gauge("lifenet.server.frames.partial.usage", "By", "Bytes the connections hold in incomplete frames and requests (bounded by the codec's MaxPartialBytes).")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	reasons := make([]metric.ObserveOption, len(transport.ReasonCounts{}))
	for r := range reasons {
		reasons[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("lifenet.close.reason", transport.Reason(r).String())))
	}
	rx := metric.WithAttributeSet(attribute.NewSet(attribute.String("network.io.direction", "receive")))
	tx := metric.WithAttributeSet(attribute.NewSet(attribute.String("network.io.direction", "transmit")))
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st, ts := srv.Stats(), srv.Transport().Stats()
		o.ObserveInt64(sessions, int64(st.Sessions))
		o.ObserveInt64(maxSessions, ts.MaxActive)
		o.ObserveInt64(accepted, int64(ts.Accepted))
		for r, n := range ts.Closed {
			if transport.Reason(r) != transport.ReasonNone {
				o.ObserveInt64(closed, int64(n), reasons[r])
			}
		}
		o.ObserveInt64(io, int64(ts.BytesIn), rx)
		o.ObserveInt64(io, int64(ts.BytesOut), tx)
		o.ObserveInt64(msgs, int64(ts.MessagesIn), rx)
		o.ObserveInt64(msgs, int64(ts.MessagesOut), tx)
		o.ObserveInt64(dgDropped, int64(ts.DatagramsDropped))
		o.ObserveInt64(overflows, int64(ts.SendQueueOverflows))
		o.ObserveInt64(dropped, int64(st.Dropped))
		o.ObserveInt64(panics, int64(st.Panics))
		o.ObserveInt64(udpPeers, ts.UDPPeers)
		o.ObserveInt64(readBufs, ts.ReadBufferBytes)
		o.ObserveInt64(inFlight, int64(st.InFlight))
		o.ObserveInt64(partial, st.PartialBytes)
		q := srv.Transport().SendQueues()
		o.ObserveInt64(queued, int64(q.Messages))
		o.ObserveInt64(queuedBytes, q.Bytes)
		o.ObserveInt64(waiting, int64(q.Waiting))
		return nil
	}, sessions, maxSessions, accepted, closed, io, msgs, dgDropped, overflows, dropped, panics,
		udpPeers, queued, queuedBytes, waiting, readBufs, inFlight, partial)
}

// ObserveClient registers observable instruments reading cl's matching
// counters (rpc.Client.Stats) at each collection.
func ObserveClient(cl *rpc.Client, mp metric.MeterProvider) (metric.Registration, error) {
	m := meter(mp)
	inFlight, err1 := m.Int64ObservableUpDownCounter("lifenet.client.calls.in_flight", metric.WithUnit("{call}"),
		metric.WithDescription("Requests waiting for their reply now, with timed-out ones whose sequence number is still held."))
	timedOut, err2 := m.Int64ObservableCounter("lifenet.client.calls.timed_out", metric.WithUnit("{call}"),
		metric.WithDescription("Calls failed by their timeout."))
	unknown, err3 := m.Int64ObservableCounter("lifenet.client.replies.unmatched", metric.WithUnit("{reply}"),
		metric.WithDescription("Replies matching no waiting request (late, duplicate or never asked for), dropped."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := cl.Stats()
		o.ObserveInt64(inFlight, int64(st.InFlight))
		o.ObserveInt64(timedOut, int64(st.TimedOut))
		o.ObserveInt64(unknown, int64(st.Unknown))
		return nil
	}, inFlight, timedOut, unknown)
}

func meter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = newConfig(nil).mp
	}
	return mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(SchemaURL))
}
