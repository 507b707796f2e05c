// Package etcd registers lifenet servers in etcd and resolves them for
// clients: [Register] keeps a server's endpoint under a lease, and a
// [Resolver] (an [rpc.Resolver]) reports the endpoints of a service as
// they come and go. It is a module of its own
// (github.com/lifenet/lifenet/etcd) so that the library's module never
// depends on etcd's client.
//
// # Key layout
//
// Each endpoint of a service is one key,
//
//	/lifenet/services/{service}/{addr}
//
// ([DefaultPrefix] + service + "/" + addr; the prefix is configurable and
// must end with '/'), whose value is the JSON of the [rpc.Endpoint]:
//
//	{"addr":"10.0.0.5:5500","weight":2,"zone":"eu-1","version":"1.4.0","meta":{"dc":"north"}}
//
// addr is the endpoint's Addr as given (host:port, or a URL such as
// tcp://host:port, slashes and all); the resolver reads the address from
// the value, not from the key. A service name may not contain '/', so that
// no service's keys fall under another's prefix. The key is attached to
// the registration's lease, so that it goes when the lease goes. Any
// program can register or list with etcdctl:
//
//	etcdctl get --prefix /lifenet/services/calc/
//
// # Registration
//
// [Register] grants a lease of [RegisterConfig.TTL] (default 15 s), writes
// the key under it and keeps the lease alive from a goroutine of its own
// (etcd's client sends a keep-alive every TTL/3). A server killed, or cut
// off from etcd, stays listed until its lease expires: at most the TTL,
// plus etcd's expiry check (every 500 ms).
//
// When the keep-alive ends (etcd answered that the lease is gone, or gave
// no answer for a TTL, as while it is down or restarting), the
// registration reports [StateLost] and writes its key again: under the old
// lease if etcd still has it (etcd extends every lease when it elects a
// leader, so a lease outlives a restart of etcd), else under a new one.
// Each attempt is bounded by [RegisterConfig.Timeout] (default TTL/3);
// failed attempts are retried after a wait that doubles from RetryMin
// (200 ms) to RetryMax (default TTL/3), with jitter, until one succeeds or
// the registration closes. A renewal under the same lease with the same
// value writes nothing, so resolvers see no event. Once etcd is back, the
// key is back within about Timeout + RetryMax: two thirds of the TTL by
// default.
//
// [Registration.Close] stops the keep-alive, deletes the key (if it is
// still under the registration's lease) and revokes the lease. A server
// calls it at the start of its shutdown, before [rpc.Server.Shutdown],
// so that clients stop choosing it while it still answers the calls
// already sent to it.
//
// # Resolution
//
// [Resolver.Watch] lists the service's keys (one Get with the prefix),
// reports the set, and watches the prefix from the list's revision + 1, so
// that no change between the list and the watch is missed. Changes are
// gathered for [ResolverConfig.Debounce] (default 100 ms) after the first
// of a burst, then the set is reported if it differs from the last one.
// When the watch fails, or etcd has compacted the revisions it needs
// (ErrCompacted, as after a long disconnection), Watch lists again and
// reports the difference; failed lists are retried with backoff.
//
// While etcd cannot be reached the resolver reports nothing: the last set
// stands, and an endpoint leaves the set only when its key is deleted in
// etcd (by Close, or by its lease's expiry), never because etcd is down.
// A value that is not the JSON of an endpoint with an address is skipped
// with a log line.
//
// # Clients of etcd
//
// The caller makes and closes the [clientv3.Client]; [ClientConfig] gives
// the settings the timings above assume (chiefly gRPC's reconnect backoff
// bounded at 1 s instead of gRPC's default 120 s).
package etcd
