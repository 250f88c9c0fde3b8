// Package gpu reads NVIDIA GPU state through NVML. It owns the narrow slice
// of go-nvml that hwprobe uses (Library and Device), so tests can inject
// go-nvml's mock servers and real runs load libnvidia-ml at run time: no
// CUDA or NVIDIA library is needed to build.
//
// go-nvml needs cgo (for dlopen). Built without cgo, the package keeps its
// types, so reports can be read anywhere, and Collect reports the GPU
// section as unavailable.
package gpu

// Section is the GPU part of the inventory.
type Section struct {
	// Available is false when NVML could not be used; Reason says why
	// (for example "NVML library not found: no NVIDIA driver").
	Available         bool      `json:"available"`
	Reason            string    `json:"reason,omitempty"`
	LibraryMissing    bool      `json:"library_missing,omitempty"` // no libnvidia-ml: no NVIDIA driver installed
	DriverVersion     string    `json:"driver_version,omitempty"`
	CUDADriverVersion string    `json:"cuda_driver_version,omitempty"` // e.g. "12.4"
	Count             int       `json:"count"`
	GPUs              []GPU     `json:"gpus,omitempty"`
	XID               *XIDWatch `json:"xid,omitempty"` // present when XID events were asked for
}

// GPU is one device. Pointer fields are nil when NVML does not support the
// query on this device; Errors lists queries that failed otherwise.
type GPU struct {
	Index             int           `json:"index"`
	Name              string        `json:"name"`
	UUID              string        `json:"uuid"`
	PCIBusID          string        `json:"pci_bus_id,omitempty"`
	MemoryBytes       uint64        `json:"memory_bytes"`
	ComputeCapability string        `json:"compute_capability,omitempty"` // "9.0"
	NVLink            NVLink        `json:"nvlink"`
	MIG               *MIG          `json:"mig,omitempty"`
	ECC               *ECC          `json:"ecc,omitempty"`
	RemappedRows      *RemappedRows `json:"remapped_rows,omitempty"`
	RetiredPages      *RetiredPages `json:"retired_pages,omitempty"`
	PCIe              PCIe          `json:"pcie"`
	Clocks            Clocks        `json:"clocks"`
	PowerLimitWatts   *float64      `json:"power_limit_watts,omitempty"`
	TemperatureC      *int          `json:"temperature_c,omitempty"`
	Errors            []string      `json:"errors,omitempty"`
}

// NVLink counts the links that exist on the device and those active.
type NVLink struct {
	Supported bool  `json:"supported"`
	Links     int   `json:"links"`          // links that exist
	Active    int   `json:"active"`         // links in the enabled state
	Down      []int `json:"down,omitempty"` // ids of links that exist but are not active
}

// MIG is the multi-instance GPU mode.
type MIG struct {
	Enabled        bool `json:"enabled"`
	PendingEnabled bool `json:"pending_enabled"`
}

// ECC is the ECC mode and uncorrected error counters (nil when unknown).
type ECC struct {
	Enabled              bool    `json:"enabled"`
	PendingEnabled       bool    `json:"pending_enabled"`
	VolatileUncorrected  *uint64 `json:"volatile_uncorrected,omitempty"`
	AggregateUncorrected *uint64 `json:"aggregate_uncorrected,omitempty"`
}

// RemappedRows is the row-remapping state (Ampere and later).
type RemappedRows struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failed        bool `json:"failed"`
}

// RetiredPages is the page-retirement state (before Ampere).
type RetiredPages struct {
	SingleBit int  `json:"single_bit"`
	DoubleBit int  `json:"double_bit"`
	Pending   bool `json:"pending"`
}

// PCIe is the link generation and width, current against maximum.
type PCIe struct {
	GenCurrent   int `json:"gen_current,omitempty"`
	GenMax       int `json:"gen_max,omitempty"`
	WidthCurrent int `json:"width_current,omitempty"`
	WidthMax     int `json:"width_max,omitempty"`
}

// Clocks in MHz.
type Clocks struct {
	SMMHz        uint32 `json:"sm_mhz,omitempty"`
	MemoryMHz    uint32 `json:"memory_mhz,omitempty"`
	SMMaxMHz     uint32 `json:"sm_max_mhz,omitempty"`
	MemoryMaxMHz uint32 `json:"memory_max_mhz,omitempty"`
}

// XIDWatch is what an XID listening window saw.
type XIDWatch struct {
	WindowSeconds  float64    `json:"window_seconds"`  // asked for
	WatchedSeconds float64    `json:"watched_seconds"` // listened for; less than WindowSeconds means cut short
	Events         []XIDEvent `json:"events"`
	Error          string     `json:"error,omitempty"`
}

// XIDEvent is one critical XID error reported by the driver.
type XIDEvent struct {
	GPU  int    `json:"gpu"` // index, -1 when the device is not known
	UUID string `json:"uuid,omitempty"`
	XID  uint64 `json:"xid"`
}
