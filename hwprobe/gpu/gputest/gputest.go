//go:build cgo

// Package gputest builds go-nvml mock servers (DGX A100, H100 and H200)
// with every query hwprobe makes answered as on a healthy machine, so a
// test can break one thing at a time by replacing one function.
package gputest

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// NVLink links per GPU on the SXM parts.
const (
	A100Links = 12
	H100Links = 18
)

// DGXA100 is a healthy 8x A100 SXM4 40GB server.
func DGXA100() *server.Server { return healthy(dgxa100.New(), A100Links, 4) }

// DGXH100 is a healthy 8x H100 SXM5 80GB server.
func DGXH100() *server.Server { return healthy(dgxh100.New(), H100Links, 5) }

// DGXH200 is a healthy 8x H200 SXM5 141GB server.
func DGXH200() *server.Server { return healthy(dgxh200.New(), H100Links, 5) }

// Device returns GPU i of s, to change what it answers.
func Device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

// RemoveGPU makes s report one GPU fewer, as when a GPU falls off the bus.
func RemoveGPU(s *server.Server, i int) {
	s.Devices = append(s.Devices[:i:i], s.Devices[i+1:]...)
}

// NoLibrary is an NVML whose shared library cannot be loaded: no driver.
func NoLibrary() *mock.Interface {
	return &mock.Interface{
		InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND },
	}
}

func healthy(s *server.Server, links, pcieGen int) *server.Server {
	for i := range s.Devices {
		setHealthy(Device(s, i), links, pcieGen)
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { return nvml.EventData{}, nvml.ERROR_TIMEOUT },
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return s
}

func setHealthy(d *server.Device, links, pcieGen int) {
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		if link < 0 || link >= links {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return 0, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
	d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return pcieGen, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return pcieGen, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if c == nvml.CLOCK_MEM {
			return 2619, nvml.SUCCESS
		}
		return 1980, nvml.SUCCESS
	}
	d.GetMaxClockInfoFunc = d.GetClockInfoFunc
	d.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 34, nvml.SUCCESS }
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
}
