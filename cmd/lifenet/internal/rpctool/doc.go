// Package rpctool implements the RPC commands of the lifenet tool: `serve`
// (an RPC server with NewLife's benchmark controller, for lifenet or Go's
// net/rpc), `call` (call any SRMP/NewLife server from the shell) and
// `rpcload` (NewLife.Remoting's RPC benchmarks: calls/s, latency, bytes
// allocated and server CPU per call). The controller, the call shapes and
// the measuring loop are internal/rpcbench's, which bench/ shares.
package rpctool
