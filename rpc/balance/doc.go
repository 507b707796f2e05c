// Package balance holds the balancing policies an rpc client can spread
// its calls with over the endpoints a [rpc.Resolver] reports. Each
// implements [rpc.Balancer]; [ByName] makes one from its CLI name.
//
//   - [Failover] ("failover"): every call to the first endpoint in the
//     resolver's order that is not shielded, and back to it once it is
//     probed healthy: NewLife's default (ApiHttpClient, FailoverLoadBalancer).
//   - [RoundRobin] ("round-robin"): each endpoint in turn, ignoring weights,
//     as grpc's round_robin.
//   - [WeightedRoundRobin] ("weighted"): shares in proportion to
//     [rpc.Endpoint.Weight], in nginx's smooth order, as NewLife's
//     WeightedRoundRobinLoadBalancer and grpc's weighted_round_robin with
//     fixed weights.
//   - [P2C] ("p2c"): one of two endpoints chosen at random, by chance at
//     odds inverse to the square of their loads, the load being a moving
//     average of latency times the calls in flight plus one, as go-zero's
//     p2c (and Finagle's) but not always the less loaded.
//   - [ConsistentHash] ("hash"): calls with the same key
//     ([rpc.WithBalanceKey]) to the same endpoint, on a ring of virtual
//     nodes, as grpc's ring_hash; calls with no key round-robin.
//
// NewLife's Race (staggered attempts on several endpoints, the first
// answer wins) is not a balancer but a strategy of the client, which picks
// each attempt's endpoint from a balancer with [rpc.PickInfo.Exclude]; the
// CLI's "race" is handled there, and ByName refuses it.
//
// # What every policy shares
//
// Shielding. An endpoint that [rpc.Balancer.Done] reports
// [rpc.PickResult.Unavailable] is shielded: picks skip it for
// [Config.ShieldTime] (default 10 s). Once that is over, the next pick
// that would choose it probes it (one pick per shield period; the others
// still skip it): a success clears the shield, another unavailable report
// doubles it, up to [Config.MaxShieldTime] (default 60 s). Reports from
// calls that were already in flight when the endpoint was shielded (every
// call a reset connection fails) count once, not once each. A reply with
// an error is not unavailability. If every endpoint is shielded, a pick
// does not fail: it goes to the endpoint whose shield ends soonest and
// probes it, so that a client whose servers all went away finds the first
// that returns without waiting for a shield to end.
//
// Exclude. A pick never returns [rpc.PickInfo.Exclude] (the endpoint the
// call's previous attempt failed on) nor one of [rpc.PickInfo.Tried] (those
// of every earlier attempt) while another endpoint is usable; if none is,
// it returns an excluded one rather than fail.
//
// Errors. Pick fails, with [rpc.ErrNoEndpoints], only when the set is
// empty: before the first Update, or after one with no endpoints.
//
// In-flight counts. Each Pick counts its endpoint's call in flight until
// the matching Done (P2C weighs by them; [Failover.Stats] and the like
// report them). A count never goes below zero, even for a Done whose
// address an Update removed and another added back.
//
// Updates. An endpoint keeps its state (shield, counts, latency) by Addr
// across Update; an endpoint that leaves the set with calls in flight is
// kept aside (never picked) until an Update finds none in flight, so that
// their Done still counts, and one that comes back in the meantime has
// its state back. The
// first of several endpoints with the same Addr counts; an empty Addr is
// ignored; a Weight of 0 or less counts as 1, one above 1 000 000 as
// 1 000 000.
//
// Concurrency. Pick and Done may be called from any number of goroutines,
// Update from one at a time. Update publishes an immutable snapshot of the
// set through an atomic pointer; Pick and Done read it with one atomic
// load, count with atomics on the endpoint, take no lock shared by all
// callers and do not allocate. Only a shield's changes lock (that
// endpoint's own mutex).
package balance
