// Package cputime reads the CPU time this process has used, user and
// system. On a machine whose cores other processes share, CPU time per
// operation leaves out the time they held the cores, which wall time
// counts; benchmarks and scale tests report it beside wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time the calling process has used so far, user and
// system, over all its threads.
func Process() time.Duration {
	var ru syscall.Rusage
	// getrusage fails only for an invalid who or a bad pointer, which this
	// call cannot pass: an error here is a broken platform, not a state.
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("cputime: getrusage(RUSAGE_SELF): " + err.Error())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
