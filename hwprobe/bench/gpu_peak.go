package bench

import "strings"

// gpuPeak holds datasheet peaks for one GPU model: dense tensor TFLOP/s, and
// GB/s for memory, host link (per direction) and NVLink (per direction).
type gpuPeak struct {
	BF16, FP16, FP8 float64 // TFLOP/s, dense
	HBM             float64 // GB/s
	PCIe            float64 // GB/s per direction
	NVLink          float64 // GB/s per direction, 0 without NVLink
}

// gpuPeakFor looks a CUDA device name up in a small datasheet table (NVIDIA
// datasheets, SXM parts where both exist). ok is false for unknown models;
// the catalog package may replace this table.
func gpuPeakFor(name string) (gpuPeak, bool) {
	n := strings.ToUpper(name)
	switch {
	case strings.Contains(n, "H200"):
		return gpuPeak{BF16: 989, FP16: 989, FP8: 1979, HBM: 4800, PCIe: 64, NVLink: 450}, true
	case strings.Contains(n, "H100") && strings.Contains(n, "PCIE"):
		return gpuPeak{BF16: 756, FP16: 756, FP8: 1513, HBM: 2000, PCIe: 64}, true
	case strings.Contains(n, "H100"):
		return gpuPeak{BF16: 989, FP16: 989, FP8: 1979, HBM: 3350, PCIe: 64, NVLink: 450}, true
	case strings.Contains(n, "A100") && strings.Contains(n, "80GB"):
		return gpuPeak{BF16: 312, FP16: 312, HBM: 2039, PCIe: 32, NVLink: 300}, true
	case strings.Contains(n, "A100"):
		return gpuPeak{BF16: 312, FP16: 312, HBM: 1555, PCIe: 32, NVLink: 300}, true
	case strings.Contains(n, "L40S"):
		return gpuPeak{BF16: 362, FP16: 362, FP8: 733, HBM: 864, PCIe: 32}, true
	case strings.Contains(n, "L4"):
		return gpuPeak{BF16: 121, FP16: 121, FP8: 242, HBM: 300, PCIe: 32}, true
	case strings.Contains(n, "A10G"):
		// No official tensor peak for the A10G; only memory is known.
		return gpuPeak{HBM: 600, PCIe: 32}, true
	}
	return gpuPeak{}, false
}
