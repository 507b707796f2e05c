module github.com/lifenet/lifenet/bench

go 1.26.0

replace github.com/lifenet/lifenet => ../

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/lifenet/lifenet v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.48.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/gobwas/ws v1.5.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)
