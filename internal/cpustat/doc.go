// Package cpustat reads this process's CPU time, for the CPU-per-message
// and per-call figures of the load tools and internal/rpcbench (getrusage
// on Unix, GetProcessTimes on Windows), and starts their --cpuprofile.
package cpustat
