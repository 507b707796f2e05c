// Package rpcport holds no code: its tests are the RPC port's part of the
// standing hostile battery (issue 26), run in process over real loopback
// sockets against an rpc.Server in the shape `lifenet serve` uses (SRMP,
// HTTP and WebSocket on one TCP port, NewLife's benchmark actions inline on
// the reading goroutines, the defaults but where a test says otherwise).
//
// Every attack runs beside the bystanders, an SRMP rpc.Client and an HTTP
// client calling all the time, each of whose calls must get its own reply;
// the heap and the RSS are sampled meanwhile, and after the attack the
// goroutines and the live heap must be back to their baselines (the
// figures are logged on lines starting FIGURES).
//
//   - JSON bombs (json_bomb_test.go): deep, wide and long arguments up to
//     the frame limit over SRMP and HTTP, and one byte over it.
//   - Action names (action_name_test.go): every varint length of a name up
//     to the longest a frame holds, malformed names and varints, over SRMP,
//     WebSocket and HTTP.
//   - WebSocket (websocket_test.go, websocket_close_test.go): lengths up to
//     2^64-1, RSV bits, undefined opcodes, bad control frames, invalid close
//     codes (every one of the 65,536 in a full-size run), fragmentation
//     rules, unfinished messages and frames, ping floods read and never
//     read.
//   - HTTP (http_slow_test.go, http_smuggle_test.go,
//     http_pipeline_test.go): slow request lines, headers and bodies, 1 MB
//     header lines, 10 GB Content-Lengths, TE+CL smuggling shapes and heads
//     the standard library refuses (F7), 10,000 pipelined requests.
//   - SRMP that looks like HTTP (srmp_get_test.go): frames starting "GET ",
//     "POST ", … and request lines that never end.
//   - Non-readers of big replies (nonreader_test.go), with pushes to all.
//   - Issue 26's F1, F2, F3, F6 and F8 at scale (served_expire_test.go,
//     push_test.go, large_calls_test.go, duplicate_replies_test.go,
//     websocket_close_test.go).
//
// The tests run one after another (leak checking is process-wide). A
// normal build runs a size that keeps the package near 35 s on a loaded
// 2-core machine, the race detector a smaller one; LIFENET_RPCPORT_FULL=1
// runs the sizes the issue names (docs/reliability.md has that run's
// figures).
package rpcport
