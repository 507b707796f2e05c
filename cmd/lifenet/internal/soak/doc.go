// Package soak implements `lifenet soak`, item 13 of the hostile battery:
// one process runs an rpc.Server and a codec SRMP echo server on loopback
// and drives them for minutes with mixed payload sizes, connection churn and
// injected faults (malformed frames, client timeouts, panicking handlers),
// sampling goroutines, heap, pooled buffers, file descriptors, sessions and
// the requests pending in the clients' matchers. It fails when a metric trends upward over the second
// half of the run, when one does not return to its baseline once the load is
// drained, or when the errors seen are not exactly the injected ones.
package soak
