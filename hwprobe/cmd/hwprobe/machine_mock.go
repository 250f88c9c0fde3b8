//go:build hwprobe_nvmlmock

package main

import (
	"fmt"

	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
)

// A test build (tag hwprobe_nvmlmock): when HWPROBE_MACHINE names a fixed
// machine description (zen5, sapphirerapids), the CPU and network
// collectors read that description's /proc, /sys and cpuid instead of
// this machine's, so a test, not the machine it runs on, decides whether
// a node passes its CPU checks. Release builds do not contain this file.

// configureMachine makes a.fs and a.cpuid the description HWPROBE_MACHINE
// names, and says so on stderr: a report from it describes no real CPU.
func configureMachine(a *app) error {
	v := a.getenv(machine.EnvVar)
	if v == "" {
		return nil
	}
	d, err := machine.Builtin(v)
	if err != nil {
		return fmt.Errorf("%s: %w", machine.EnvVar, err)
	}
	fmt.Fprintf(a.stderr, "hwprobe: test build: the CPU is the fixed machine description %s, not this machine's\n", d.Name)
	a.fs, a.cpuid = d.FS(), d.CPUID()
	return nil
}
