// Package cluster is a client of a service served by many servers: it
// finds them with an [rpc.Resolver] ([rpc.StaticResolver], [DNSResolver],
// the etcd module's Resolver), spreads its calls over them with an
// [rpc.Balancer] (the policies of package
// [github.com/lifenet/lifenet/rpc/balance]), retries what is safe to
// retry, and races calls marked for it.
//
// # The life of a call
//
// Resolve. [Dial] starts the resolver's Watch and waits for its first
// endpoint set. Each set it reports (its invalid entries skipped, see
// below) replaces the last: the client makes the new endpoints, hands the
// set to the balancer ([rpc.Balancer.Update]) and lets the endpoints that
// left drain. A new endpoint takes calls from the next pick on; one that
// left takes no new call, its calls in flight finish, and then its
// connection closes. No call fails because the set changed.
//
// Pick. Each attempt asks the balancer for an endpoint
// ([rpc.Balancer.Pick], with the action and the ctx's
// [rpc.WithBalanceKey] key), and counts itself in flight on it.
//
// Per-endpoint client. Each endpoint has its own [rpc.Client] with
// [Config.Client], dialed when a call's pick first falls on it (a
// balancer such as [github.com/lifenet/lifenet/rpc/balance.Failover] uses
// one endpoint of many, and a large set should not open a connection to
// every server). A dial is not done until the server has answered a first
// Api/Health on the new connection (any reply: a 404 from a NewLife
// server will do), all within [Config.ConnectTimeout] (3 s): a listener
// that takes connections and never answers fails the dial, with nothing
// of a call written to it. A dial that fails marks the endpoint
// unreachable ([EndpointState.Unreachable]) and reports it unavailable
// to the balancer, which shields it; a pick that falls on it within the
// next second reports it so again without dialing.
//
// Connecting. A call whose pick is not connected waits for that
// endpoint's dial (the calls that pick it meanwhile share it), at most
// 250 ms; then, or at once if the dial fails, it goes to an endpoint that
// is connected, if there is one, leaving the dial to go on without it and
// to report its end to the balancer. With none connected, it dials more
// picks: the next one each 250 ms (happy eyeballs), and up to 32 at once
// after a failure, so that a set of thousands of dead endpoints is swept
// in parallel; the first to connect takes the call. It fails, with an
// error matching [rpc.ErrNoServer] and [rpc.ErrNotSent], only when every
// pick failed and no dial is left, or with [rpc.ErrTimeout] when its
// Timeout (which the wait counts in) passes first. So a black hole costs
// a fresh client's call about 250 ms, not its Timeout; and with one
// healthy endpoint among thousands that answer nothing, calls go to it.
// An endpoint's client that cannot dial its server again (the server
// went away) fails its call with [rpc.ErrNoServer] and [rpc.ErrNotSent],
// and is set aside: the endpoint is not connected any more.
//
// Registry entries are not trusted: each set's entries are checked
// ([rpc.Endpoint.Validate]: a scheme the client dials, a host and a
// port, at most [rpc.MaxEndpointAddr] bytes, one server) and those that
// fail are skipped, each logged once (rate-limited), as are repeats and
// the entries past [Config.MaxEndpoints]; the others make the set.
//
// Done. The attempt's end goes back to the balancer
// ([rpc.Balancer.Done]) as a [rpc.PickResult]:
//
//   - Unavailable: a connection refused, reset or closed
//     ([rpc.ErrConnClosed], [rpc.ErrNotSent]), no server reachable
//     ([rpc.ErrNoServer]) or a failed dial;
//   - a plain sample of the latency: a success, an error reply (an
//     [*rpc.APIError], [rpc.ErrBusy] and a draining server's 503
//     included), or a timeout (the time waited: a slow server is not a
//     down one);
//   - Canceled: the caller's ctx was canceled, or another attempt of a
//     race won.
//
// Health. Besides the balancer's shield (a refused or reset connection,
// probed back by a real call), the client keeps new calls off an
// endpoint for two reasons of its own ([EndpointState.Health]): it gave
// no reply to [Config.ShieldTimeouts] (2) attempts in a row, each written
// after its last reply ([HealthNoReply]: its link is down, or it hangs),
// or it says it is not serving ([HealthNotServing]: Api/Health answers
// 503, as after [rpc.Server.SetServing] with false, or it refused a call
// with a 503 [rpc.ErrNotServing] or [rpc.ErrShutdown]). Every
// [Config.ProbeInterval] (1 s) the client asks Api/Health of each
// endpoint it is connected to, and of each it shields; a "Serving" brings
// an endpoint back, and so does any reply to one shielded for no reply,
// whose probes go out on a new connection (the old one may be stuck
// behind TCP's retransmission backoff). So a draining server takes no new
// call from the probe after it drains, its calls in flight finishing, and
// a partitioned one is back within a probe period of its link. The
// balancer never sees a shielded endpoint's turns as failures: a pick
// that falls on it is given back ([rpc.PickResult.Canceled]) and picked
// again avoiding it, so the policy shares its turns out as it would an
// excluded endpoint's; with no other endpoint left, it is picked all the
// same.
//
// Move. An attempt that was never written ([rpc.ErrNotSent]: its
// endpoint's client could not dial again) goes to another endpoint at
// once, up to twice, whatever the retry policy: it did not run.
//
// Retry. With [Config.Retry] ([RetryPolicy]; none by default), a failed
// attempt is sent again, to an endpoint none of its attempts went to yet
// while there is one ([rpc.PickInfo.Exclude], [rpc.PickInfo.Tried]),
// after an exponential backoff with jitter, while the budget
// ([RetryBudget], grpc-go's throttling) allows, only when that cannot run
// the call twice: it never left ([rpc.ErrNotSent]: a failed dial among
// others), a draining server refused it unrun, or the call is
// marked [Idempotent] and its endpoint failed or timed out. A call that
// was written and is not marked idempotent is never sent again; an error
// reply is never retried.
//
// Race. A call whose ctx is marked with [Race] (and [Idempotent]) goes to
// one endpoint, then to another each stagger with no answer (or at once
// when an attempt fails), up to [Config.RaceAttempts]; the first success
// is the call's, and the others are canceled.
//
// Close ends the watch, refuses new calls, waits for those in flight and
// closes every endpoint's client.
//
// The hot path (no retry, no race) adds no allocation to
// [rpc.Client.Invoke]'s: a pick, a map lookup, a few atomic counts on the
// endpoint and the Done.
package cluster
