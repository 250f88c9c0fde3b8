package bench

import "github.com/mlplatform/mlplatform/internal/catalog"

// gpuPeak holds datasheet peaks for one GPU model: dense tensor TFLOP/s, and
// GB/s for memory, host link (per direction) and NVLink (per direction).
type gpuPeak struct {
	BF16, FP16, FP8 float64 // TFLOP/s, dense
	HBM             float64 // GB/s
	PCIe            float64 // GB/s per direction
	NVLink          float64 // GB/s per direction, 0 without NVLink
	Source          string
}

// gpuPeakFor looks a CUDA device name up in the catalog, matched exactly by
// SKU: "NVIDIA L40" never gets the L4 figures, nor "NVIDIA H100 NVL" the
// SXM ones. ok is false for a name the catalog does not know.
func gpuPeakFor(name string) (gpuPeak, bool) {
	p, ok := catalog.GPUPeakByDeviceName(name)
	if !ok {
		return gpuPeak{}, false
	}
	return gpuPeak{BF16: p.BF16, FP16: p.FP16, FP8: p.FP8, HBM: p.HBMGBps, PCIe: p.PCIeGBps, NVLink: p.NVLinkGBps,
		Source: "catalog: " + p.DeviceName + ": " + p.Source}, true
}
