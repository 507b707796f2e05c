// Package grpcbench is NewLife's benchmark controller as a gRPC service,
// written by hand (no protoc): service "bench.Bench" with the methods
// NoArg, EchoPacket, EchoString, MultiArgs and ServerStats, whose messages
// are protobuf's well-known types (emptypb, wrapperspb, structpb). Its
// ServiceDesc, server handlers and client stubs are what protoc-gen-go-grpc
// would generate for
//
//	service Bench {
//	  rpc NoArg(google.protobuf.Empty) returns (google.protobuf.Int32Value);
//	  rpc EchoPacket(google.protobuf.BytesValue) returns (google.protobuf.BytesValue);
//	  rpc EchoString(google.protobuf.StringValue) returns (google.protobuf.StringValue);
//	  rpc MultiArgs(google.protobuf.Struct) returns (google.protobuf.Int32Value);
//	  rpc ServerStats(google.protobuf.Empty) returns (google.protobuf.Struct);
//	}
//
// The package also holds the call shapes shared by cmd/grpcload and the
// in-process benchmarks.
package grpcbench

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lifenet/lifenet/internal/rpcbench"
)

// ServiceName is the gRPC service's full name.
const ServiceName = "bench.Bench"

// Full method names.
const (
	MethodNoArg       = "/" + ServiceName + "/NoArg"
	MethodEchoPacket  = "/" + ServiceName + "/EchoPacket"
	MethodEchoString  = "/" + ServiceName + "/EchoString"
	MethodMultiArgs   = "/" + ServiceName + "/MultiArgs"
	MethodServerStats = "/" + ServiceName + "/ServerStats"
)

// BenchServer is the service's server API.
type BenchServer interface {
	NoArg(context.Context, *emptypb.Empty) (*wrapperspb.Int32Value, error)
	EchoPacket(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
	EchoString(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
	MultiArgs(context.Context, *structpb.Struct) (*wrapperspb.Int32Value, error)
	ServerStats(context.Context, *emptypb.Empty) (*structpb.Struct, error)
}

// Server implements BenchServer the way rpcbench's controller does.
type Server struct{}

// NoArg returns 42.
func (Server) NoArg(context.Context, *emptypb.Empty) (*wrapperspb.Int32Value, error) {
	return &wrapperspb.Int32Value{Value: 42}, nil
}

// EchoPacket returns its argument.
func (Server) EchoPacket(_ context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	return in, nil
}

// EchoString returns its argument.
func (Server) EchoString(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return in, nil
}

// MultiArgs returns the argument a.
func (Server) MultiArgs(_ context.Context, in *structpb.Struct) (*wrapperspb.Int32Value, error) {
	return &wrapperspb.Int32Value{Value: int32(in.GetFields()["a"].GetNumberValue())}, nil
}

// ServerStats reports this process's user+system CPU seconds ("cpu") and
// bytes allocated so far ("totalAlloc"), like rpcbench's Bench/ServerStats.
func (Server) ServerStats(context.Context, *emptypb.Empty) (*structpb.Struct, error) {
	ps := rpcbench.ReadProcStats()
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"cpu":        structpb.NewNumberValue(ps.CPU),
		"totalAlloc": structpb.NewNumberValue(float64(ps.TotalAlloc)),
	}}, nil
}

// Register registers srv as the bench.Bench service on s.
func Register(s grpc.ServiceRegistrar, srv BenchServer) { s.RegisterService(&ServiceDesc, srv) }

// ServiceDesc is the bench.Bench service's descriptor.
var ServiceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*BenchServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "NoArg", Handler: unary(MethodNoArg, BenchServer.NoArg)},
		{MethodName: "EchoPacket", Handler: unary(MethodEchoPacket, BenchServer.EchoPacket)},
		{MethodName: "EchoString", Handler: unary(MethodEchoString, BenchServer.EchoString)},
		{MethodName: "MultiArgs", Handler: unary(MethodMultiArgs, BenchServer.MultiArgs)},
		{MethodName: "ServerStats", Handler: unary(MethodServerStats, BenchServer.ServerStats)},
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "bench.proto",
}

// unary is a generated unary handler: decode the request into a new In,
// then call fn, through the interceptor when there is one.
func unary[In, Out any](method string, fn func(BenchServer, context.Context, *In) (*Out, error)) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(In)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return fn(srv.(BenchServer), ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
		return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return fn(srv.(BenchServer), ctx, req.(*In))
		})
	}
}

// Client is the service's client stub; like generated stubs, each call
// allocates its reply message.
type Client struct{ cc grpc.ClientConnInterface }

// NewClient returns a stub that calls through cc.
func NewClient(cc grpc.ClientConnInterface) *Client { return &Client{cc} }

// NoArg calls bench.Bench/NoArg.
func (c *Client) NoArg(ctx context.Context, in *emptypb.Empty, opts ...grpc.CallOption) (*wrapperspb.Int32Value, error) {
	out := new(wrapperspb.Int32Value)
	return out, c.cc.Invoke(ctx, MethodNoArg, in, out, opts...)
}

// EchoPacket calls bench.Bench/EchoPacket.
func (c *Client) EchoPacket(ctx context.Context, in *wrapperspb.BytesValue, opts ...grpc.CallOption) (*wrapperspb.BytesValue, error) {
	out := new(wrapperspb.BytesValue)
	return out, c.cc.Invoke(ctx, MethodEchoPacket, in, out, opts...)
}

// EchoString calls bench.Bench/EchoString.
func (c *Client) EchoString(ctx context.Context, in *wrapperspb.StringValue, opts ...grpc.CallOption) (*wrapperspb.StringValue, error) {
	out := new(wrapperspb.StringValue)
	return out, c.cc.Invoke(ctx, MethodEchoString, in, out, opts...)
}

// MultiArgs calls bench.Bench/MultiArgs.
func (c *Client) MultiArgs(ctx context.Context, in *structpb.Struct, opts ...grpc.CallOption) (*wrapperspb.Int32Value, error) {
	out := new(wrapperspb.Int32Value)
	return out, c.cc.Invoke(ctx, MethodMultiArgs, in, out, opts...)
}

// ServerStats calls bench.Bench/ServerStats and returns the server's CPU
// seconds and bytes allocated so far.
func (c *Client) ServerStats(ctx context.Context, opts ...grpc.CallOption) (cpu float64, totalAlloc uint64, err error) {
	out := new(structpb.Struct)
	if err := c.cc.Invoke(ctx, MethodServerStats, &emptypb.Empty{}, out, opts...); err != nil {
		return 0, 0, err
	}
	f := out.GetFields()
	return f["cpu"].GetNumberValue(), uint64(f["totalAlloc"].GetNumberValue()), nil
}

// MultiArgs builds Bench/MultiArgs's arguments {a:42, b:123456, c:"test",
// d:true, e:3.14} as a protobuf Struct.
func MultiArgs() *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"a": structpb.NewNumberValue(42),
		"b": structpb.NewNumberValue(123456),
		"c": structpb.NewStringValue("test"),
		"d": structpb.NewBoolValue(true),
		"e": structpb.NewNumberValue(3.14),
	}}
}

// NewCaller returns a caller of sh through c. The request message is built
// once (a user sending the same request again would too); the reply is a
// new message per call, as generated stubs make it.
func NewCaller(c *Client, sh rpcbench.Shape) rpcbench.Caller {
	switch {
	case sh.Bytes != nil:
		in := &wrapperspb.BytesValue{Value: sh.Bytes}
		return func(ctx context.Context) error {
			out, err := c.EchoPacket(ctx, in)
			if err != nil {
				return err
			}
			return rpcbench.CheckBytes(out.GetValue(), sh.Bytes)
		}
	case sh.Str != "":
		in := &wrapperspb.StringValue{Value: sh.Str}
		return func(ctx context.Context) error {
			out, err := c.EchoString(ctx, in)
			if err != nil {
				return err
			}
			return rpcbench.CheckString(out.GetValue(), sh.Str)
		}
	case sh.Action == "Bench/MultiArgs":
		in := MultiArgs()
		return func(ctx context.Context) error {
			out, err := c.MultiArgs(ctx, in)
			if err != nil {
				return err
			}
			return rpcbench.CheckInt(out.GetValue())
		}
	}
	in := &emptypb.Empty{}
	return func(ctx context.Context) error {
		out, err := c.NoArg(ctx, in)
		if err != nil {
			return err
		}
		return rpcbench.CheckInt(out.GetValue())
	}
}
