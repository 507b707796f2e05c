package fleet

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// ProcStats reads /proc: it is available on Linux only.
const procStats = true

// rss returns the sum of VmRSS (bytes) of the processes pids ("self" for
// this one).
func rss(pids []string) (int64, error) {
	var sum int64
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/status")
		if err != nil {
			return 0, err
		}
		_, rest, ok := bytes.Cut(b, []byte("\nVmRSS:"))
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		f := strings.Fields(string(line)) // "12345 kB"
		if !ok || len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%s/status: no VmRSS line", p)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%s/status: VmRSS %q", p, f[0])
		}
		sum += kb << 10
	}
	return sum, nil
}

// cpuSeconds returns the sum of utime+stime of the processes pids, from
// /proc/PID/stat (fields 14 and 15).
func cpuSeconds(pids []string) (float64, error) {
	var ticks int64
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return 0, err
		}
		i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 13 {
			return 0, fmt.Errorf("/proc/%s/stat does not parse", p)
		}
		for _, s := range f[11:13] { // fields 14 and 15 counted from the pid
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%s/stat does not parse", p)
			}
			ticks += n
		}
	}
	return float64(ticks) / clockTicks, nil
}

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns it (0 when it cannot be read).
func RaiseFileLimit() uint64 {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	if r.Cur < r.Max {
		r.Cur = r.Max
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &r) != nil {
			unix.Getrlimit(unix.RLIMIT_NOFILE, &r)
		}
	}
	return r.Cur
}

// LocalPorts returns the number of ephemeral ports
// (/proc/sys/net/ipv4/ip_local_port_range) and the range as text, or 0
// when it cannot be read.
func LocalPorts() (int, string) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, ""
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, ""
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, ""
	}
	return hi - lo + 1, f[0] + "-" + f[1]
}
