// Package registry holds no code: its tests are the registry's part of the
// standing hostile battery (issue 45, items 6 and 7), run in process over
// real loopback sockets against real rpc.Servers, through a
// cluster.Client whose resolver reports what a registry an attacker (or
// an operator's mistake) filled may hold:
//
//   - black holes (blackhole_test.go): an endpoint whose SYNs are dropped
//     (a listener whose accept queue is full), a listener that never
//     accepts (the kernel completes the handshakes), and one that accepts
//     and never answers: each costs a fresh client's first call a fraction
//     of ConnectTimeout (3 s), not its 15 s Timeout;
//   - invalid entries (invalid_test.go): unix:///etc/passwd, udp://,
//     ws://, "", a 100 KB address and other addresses the client cannot
//     dial are skipped, each logged once, and the calls go to the healthy
//     endpoint;
//   - 10,000 endpoints that answer nothing (bogus_linux_test.go: refused
//     ports on 127.0.0.0/8, addresses in 198.18.0.0/15, black holes) and
//     one healthy: at least 99 % of the calls started after the first 3 s
//     succeed, and one-shot clients (`lifenet call`'s shape) succeed.
//
// The figures are logged on lines starting FIGURES; docs/reliability.md
// has them. The tests run one after another (leak checking is
// process-wide).
package registry
