package catalog

import "strings"

// Peaks of the processors hwprobe measures: one source for the GPU and CPU
// figures that benchmark efficiencies are judged against. GPUs are matched
// exactly by the device name CUDA and NVML report (which names the SKU:
// "NVIDIA H100 80GB HBM3" is the SXM part, "NVIDIA H100 NVL" and
// "NVIDIA H100 PCIe" are not); CPUs exactly by the /proc/cpuinfo model name.
// Nothing is matched by substring: an unknown name has no peak.

// GPUPeak is the datasheet peak of one GPU SKU. Zero means not published.
type GPUPeak struct {
	DeviceName string  // exactly as CUDA/NVML name the device
	EC2Model   string  // the model as EC2 DescribeInstanceTypes names it, "" when no EC2 type carries it
	MemoryGiB  int     // nominal memory
	BF16       float64 // TFLOP/s, dense tensor
	FP16       float64 // TFLOP/s, dense tensor
	FP8        float64 // TFLOP/s, dense tensor; 0 without FP8 tensor cores
	HBMGBps    float64 // memory bandwidth, GB/s
	PCIeGBps   float64 // host link, GB/s per direction (x16 at the SKU's generation)
	NVLinkGBps float64 // GB/s per direction per GPU; 0 without NVLink
	Source     string
}

// GPUPeaks lists the GPU SKUs the catalog knows, from NVIDIA datasheets
// (dense figures; the datasheets' headline figures are with sparsity).
func GPUPeaks() []GPUPeak {
	return []GPUPeak{
		{"NVIDIA H100 80GB HBM3", "H100", 80, 989, 989, 1979, 3350, 64, 450, "NVIDIA H100 datasheet, SXM5"},
		{"NVIDIA H100 NVL", "", 94, 835, 835, 1670, 3900, 64, 300, "NVIDIA H100 datasheet, NVL (PCIe card, NVLink bridge 600 GB/s)"},
		{"NVIDIA H100 PCIe", "", 80, 756, 756, 1513, 2000, 64, 0, "NVIDIA H100 datasheet, PCIe"},
		{"NVIDIA H200", "H200", 141, 989, 989, 1979, 4800, 64, 450, "NVIDIA H200 datasheet, SXM"},
		{"NVIDIA H200 NVL", "", 141, 835, 835, 1670, 4800, 64, 450, "NVIDIA H200 datasheet, NVL"},
		{"NVIDIA A100-SXM4-40GB", "A100", 40, 312, 312, 0, 1555, 32, 300, "NVIDIA A100 datasheet, SXM4 40GB"},
		{"NVIDIA A100-SXM4-80GB", "A100", 80, 312, 312, 0, 2039, 32, 300, "NVIDIA A100 datasheet, SXM4 80GB"},
		{"NVIDIA A100-PCIE-40GB", "", 40, 312, 312, 0, 1555, 32, 0, "NVIDIA A100 datasheet, PCIe 40GB"},
		{"NVIDIA A100 80GB PCIe", "", 80, 312, 312, 0, 1935, 32, 0, "NVIDIA A100 datasheet, PCIe 80GB"},
		{"NVIDIA A10G", "A10G", 24, 0, 0, 0, 600, 32, 0, "AWS/NVIDIA: 600 GB/s; no tensor peak published for the A10G"},
		{"NVIDIA L4", "L4", 24, 121, 121, 242, 300, 32, 0, "NVIDIA L4 datasheet"},
		{"NVIDIA L40S", "L40S", 48, 362, 362, 733, 864, 32, 0, "NVIDIA L40S datasheet"},
		{"NVIDIA L40", "", 48, 181, 181, 362, 864, 32, 0, "NVIDIA L40 datasheet"},
	}
}

// GPUPeakByDeviceName returns the peaks of the SKU with exactly this device
// name (surrounding space and letter case ignored).
func GPUPeakByDeviceName(name string) (GPUPeak, bool) {
	n := strings.TrimSpace(name)
	for _, p := range GPUPeaks() {
		if strings.EqualFold(p.DeviceName, n) {
			return p, true
		}
	}
	return GPUPeak{}, false
}

// CPUCore is what the peak of one processor model needs.
type CPUCore struct {
	ModelName         string  // exactly as /proc/cpuinfo "model name" shows it
	Microarchitecture string  // e.g. "Zen 3", "Sapphire Rapids"
	SustainedClockGHz float64 // all-core sustained clock AWS documents, not the turbo
	FMAUnits          int     // vector FMA pipes per core
	VectorBits        int     // width of each pipe
	BF16PerCycle      int     // bf16 FLOPs per cycle per core at best (AMX, or AVX512_BF16 dot products); 0: as fp32
	Source            string
}

// FP32PerCycle is fp32 FLOPs per cycle per core: FMA pipes x lanes x 2.
func (c CPUCore) FP32PerCycle() int { return c.FMAUnits * c.VectorBits / 32 * 2 }

// CPUCores lists the processors of the catalog's instance types. The clocks
// are the sustained all-core figures AWS gives for the families; AMX is
// 1024 bf16 FLOPs per cycle per core (Intel's figure for Sapphire Rapids).
func CPUCores() []CPUCore {
	return []CPUCore{
		{"AMD EPYC 7R32", "Zen 2", 3.3, 2, 256, 0, "AWS g5/c5a: 3.3 GHz sustained all-core; Zen 2 two 256-bit FMA pipes"},
		{"AMD EPYC 7R13 Processor", "Zen 3", 3.6, 2, 256, 0, "AWS m6a/c6a/p4 hosts: 3.6 GHz all-core turbo; Zen 3 two 256-bit FMA pipes"},
		{"AMD EPYC 9R14", "Zen 4", 3.7, 2, 256, 64, "AWS m7a/c7a: 3.7 GHz all-core; Zen 4 runs AVX-512 on 256-bit pipes; AVX512_BF16 dot products"},
		{"Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", "Cascade Lake", 3.0, 2, 512, 0, "AWS c5/p3dn: 3.0 GHz sustained all-core (AVX-512 licence may lower it)"},
		{"Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "Ice Lake", 3.5, 2, 512, 0, "AWS m6i/c6i: 3.5 GHz all-core turbo"},
		{"Intel(R) Xeon(R) Platinum 8488C", "Sapphire Rapids", 3.2, 2, 512, 1024, "AWS m7i/c7i/p5: 3.2 GHz sustained all-core turbo; AMX-BF16 1024 FLOPs/cycle/core"},
	}
}

// CPUCoreByModelName returns the processor with exactly this model name.
func CPUCoreByModelName(name string) (CPUCore, bool) {
	n := strings.Join(strings.Fields(name), " ")
	for _, c := range CPUCores() {
		if c.ModelName == n {
			return c, true
		}
	}
	return CPUCore{}, false
}

// FMALatencyCycles is the latency of a dependent scalar FMA for a CPU
// vendor ("AMD", "Intel", "ARM") and x86 family and model, used to turn a
// timed FMA chain into a clock estimate. ok is false when the generation is
// not known; the caller then says its estimate rests on an assumption.
func FMALatencyCycles(vendor string, family, model int) (cycles int, ok bool) {
	switch strings.ToUpper(vendor) {
	case "AMD":
		switch {
		case family == 0x17: // Zen, Zen+, Zen 2
			return 5, true
		case family == 0x19, family == 0x1a: // Zen 3, Zen 4; Zen 5
			return 4, true
		}
	case "INTEL":
		if family == 6 {
			switch model {
			case 0x3c, 0x3f, 0x45, 0x46, 0x3d, 0x47, 0x4f, 0x56: // Haswell, Broadwell
				return 5, true
			}
			if model >= 0x4e { // Skylake and later cores
				return 4, true
			}
		}
	case "ARM":
		return 4, true // Neoverse N1, V1, V2
	}
	return 4, false
}
