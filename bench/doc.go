// Package bench holds lifenet's comparison benchmarks against Go's
// net/rpc and grpc-go. It is a module of its own
// (github.com/lifenet/lifenet/bench) so that the library's module never
// depends on grpc or protobuf: see README.md.
package bench
