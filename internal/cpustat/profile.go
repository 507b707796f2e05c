package cpustat

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartProfile starts a CPU profile of this process into path (the tools'
// --cpuprofile; "" for none) and returns the function that ends it.
func StartProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
