module github.com/lifenet/lifenet

go 1.26

require go.uber.org/goleak v1.3.0

require github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect
