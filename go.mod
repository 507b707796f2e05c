module github.com/lifenet/lifenet

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	go.uber.org/goleak v1.3.0
)
