// Package cpustat reads this process's CPU time, for the load tools'
// CPU-per-message figures (getrusage on Unix, GetProcessTimes on Windows),
// and starts their --cpuprofile.
package cpustat
