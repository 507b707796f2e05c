// Package conns holds the connection-level part of the standing hostile
// battery of issue 13 (items 4 to 8), as tests only: each item drives a
// lifenet server over real loopback sockets the way an attacker or a broken
// peer would, at the scale the issue names, and checks that every
// connection ends with its named reason and counter, that legitimate
// clients are still served, and that memory, descriptors, goroutines and
// pooled buffers come back to where they started.
//
//   - Half-frame hold (TestHalfFrameHold): 100 connections each hold an
//     incomplete 8 MiB frame; all are closed within Expire + 1 s, the
//     server-wide cap on partial-frame bytes (codec.Options.MaxPartialBytes)
//     holds throughout, and memory returns to its baseline.
//   - Slowloris (TestSlowloris): 1,000 connections trickle a byte every
//     500 ms against a 1 s first-byte timeout and a 5 s frame deadline;
//     all are closed with their reasons while 50 legitimate clients keep
//     their p99 latency under 50 ms.
//   - Connection flood and per-source cap (TestConnectionFlood,
//     TestPerSourceCap): 5,000 connections against MaxConns 4,000, and
//     64 source addresses × 40 connections against MaxConnsPerIP 32.
//   - Churn (TestChurn): 20,000 × (dial, one request, close) within 60 s,
//     with descriptors, goroutines and pooled buffers back to baseline.
//   - Slow and silent peers (TestSlowConsumers, TestWriteTimeouts,
//     TestSilentPeers): peers that never read trip the send-queue cap or
//     the write deadline; silent peers meet the idle or first-byte timeout.
//
// The tests run one after another: pooled-buffer tracking (leakcheck) is
// process-wide. The normal build runs the full numbers. Under the
// race detector, where copying a byte costs many times more, the half-frame
// hold uses 1 MiB frames against a 12 MiB cap (the same 100 connections and
// ratio), the slowloris p99 bound is logged rather than asserted, and with
// lifenet_debug as well churn runs 5,000 rounds instead of 20,000 and
// mass closes get 3 s more (see poisonSlack).
package conns
