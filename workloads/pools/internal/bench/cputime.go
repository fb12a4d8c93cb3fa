package bench

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used so far, user and system, over all its
// threads (getrusage RUSAGE_SELF, microsecond resolution); zero if it cannot be read.
// Two reads at the measured window's edges give cpu_ns_per_op without any probe.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
