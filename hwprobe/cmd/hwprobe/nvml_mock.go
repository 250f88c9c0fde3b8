//go:build hwprobe_nvmlmock && cgo

package main

import (
	"fmt"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
)

// A test build (tag hwprobe_nvmlmock): when HWPROBE_NVML_MOCK is set, NVML
// is one of go-nvml's mock servers with the faults the spec names, so
// tests run the GPU checks on machines without a GPU. Release builds do
// not contain this file.

// nvmlMockBuild says whether this build can play GPUs.
const nvmlMockBuild = true

// configureNVML makes a.newNVML the mock server HWPROBE_NVML_MOCK names,
// and says so on stderr: a report from it describes no real hardware.
func configureNVML(a *app) error {
	v := a.getenv(nvmlmock.EnvVar)
	if v == "" {
		return nil
	}
	spec, err := nvmlmock.Parse(v)
	if err != nil {
		return fmt.Errorf("%s: %w", nvmlmock.EnvVar, err)
	}
	if _, err := nvmlmock.New(spec); err != nil {
		return fmt.Errorf("%s: %w", nvmlmock.EnvVar, err)
	}
	fmt.Fprintf(a.stderr, "hwprobe: test build: NVML is go-nvml's mock server %s, not real hardware\n", spec)
	a.newNVML = func() gpu.Library {
		lib, _ := nvmlmock.New(spec) // checked above
		return lib
	}
	return nil
}
