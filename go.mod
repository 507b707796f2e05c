module github.com/lifenet/lifenet

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/gobwas/ws v1.5.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.48.0
)

require github.com/gobwas/httphead v0.1.0 // indirect
