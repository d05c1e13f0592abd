package sim

import (
	"syscall"
	"time"
)

// processCPU is the user plus system CPU time the process has used so far
// (0 if the kernel does not say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
