//go:build cgo

package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Library is the part of NVML hwprobe uses. nvml.Interface and go-nvml's
// mock servers satisfy it.
type Library interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
	EventSetCreate() (nvml.EventSet, nvml.Return)
}

// Device is the part of an NVML device handle hwprobe reads.
type Device interface {
	GetName() (string, nvml.Return)
	GetUUID() (string, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetCudaComputeCapability() (int, int, nvml.Return)
	GetNvLinkState(int) (nvml.EnableState, nvml.Return)
	GetMigMode() (int, int, nvml.Return)
	GetEccMode() (nvml.EnableState, nvml.EnableState, nvml.Return)
	GetTotalEccErrors(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return)
	GetRemappedRows() (int, int, bool, bool, nvml.Return)
	GetRetiredPages(nvml.PageRetirementCause) ([]uint64, nvml.Return)
	GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return)
	GetCurrPcieLinkGeneration() (int, nvml.Return)
	GetMaxPcieLinkGeneration() (int, nvml.Return)
	GetCurrPcieLinkWidth() (int, nvml.Return)
	GetMaxPcieLinkWidth() (int, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetPowerManagementLimit() (uint32, nvml.Return)
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
	RegisterEvents(uint64, nvml.EventSet) nvml.Return
}

var (
	_ Library = nvml.Interface(nil)
	_ Device  = nvml.Device(nil)
)

// NewLibrary returns the NVML library, loaded from libnvidia-ml.so.1 when
// Init is called. Init returns ERROR_LIBRARY_NOT_FOUND where no NVIDIA
// driver is installed.
func NewLibrary() Library {
	return nvml.New()
}
