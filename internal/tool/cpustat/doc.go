// Package cpustat reads this process's CPU time and writes its CPU profile, for the load tools'
// CPU-per-message figures (getrusage on Unix, GetProcessTimes on Windows).
package cpustat
