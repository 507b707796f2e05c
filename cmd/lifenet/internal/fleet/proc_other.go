//go:build !linux

package fleet

import "errors"

const procStats = false

var errNoProc = errors.New("process statistics need Linux's /proc")

func rss([]string) (int64, error) { return 0, errNoProc }

func cpuSeconds([]string) (float64, error) { return 0, errNoProc }

// RaiseFileLimit returns 0: the limit is not read off Linux (Go raises the
// soft limit itself on Unix systems).
func RaiseFileLimit() uint64 { return 0 }

// LocalPorts returns 0: the ephemeral port range is not read off Linux.
func LocalPorts() (int, string) { return 0, "" }
