//go:build !amd64 || purego

package bench

import "errors"

func sgemmKernels() []sgemmKernel { return []sgemmKernel{genericSgemmKernel()} }

func bf16Kernel() (sgemmKernel, bool) { return sgemmKernel{}, false }

func fmaLoop() (run func(n int), flops float64, bits int, ok bool) { return nil, 0, 0, false }

func streamKernels() (streamImpl, bool) { return genericStream(), false }

func saxpy(y, x []float32, alpha float32) {
	for i := range y {
		y[i] += alpha * x[i]
	}
}

func gemvAdd(x, w []float32, ldw int, y []float32) { gemvAddGeneric(x, w, ldw, y) }

func i8Kernel() (sgemmKernel, bool) { return sgemmKernel{}, false }

func i8Kernels() []sgemmKernel { return nil }

func i8gemvBand(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool { return false }

func i8gemvBand16(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool { return false }

func vnniLoop() (run func(n int), ops float64, ok bool) { return nil, 0, false }

func quantizeSpan(dst []uint8, x []float32, scale float32, zp int32) {
	quantizeSpanGeneric(dst, x, scale, zp)
}

func minMaxSpan(x []float32, lo, hi float32) (float32, float32) { return minMaxSpanGeneric(x, lo, hi) }

func dequantSpan(y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32) {
	return dequantSpanGeneric(y, acc, cs, ws, b, s, zp, relu, lo, hi)
}

func biasActSpan(z, act, b []float32, relu bool) { biasActSpanGeneric(z, act, b, relu) }

// errNoAMX: the AMX kernels exist for amd64 only.
var errNoAMX = errors.New("no AMX kernels in this build (amd64 only)")

func amxPermission() error { return errNoAMX }

func amxBF16Kernel() (sgemmKernel, error) { return sgemmKernel{}, errNoAMX }

func amxI8Kernel() (sgemmKernel, error) { return sgemmKernel{}, errNoAMX }

// hasVNNI: no VNNI kernels in this build.
func hasVNNI() bool { return false }

// hostQuantKernels: no element-wise kernels in this build.
var hostQuantKernels = quantKernels{}

// packPanel16Rows: no assembly packer in this build.
func packPanel16Rows(dst, src []float32, ld, kb int) bool { return false }

// packPanel16wRows: no assembly packer in this build.
func packPanel16wRows(dst []float32, src []uint16, ld, kb int) bool { return false }

// packA6Rows: no assembly packer in this build.
func packA6Rows(dst, a []float32, ld, kb int) int { return 0 }

// packA6WideRows: no assembly packer in this build.
func packA6WideRows(dst []float32, a []uint16, ld, kb int) int { return 0 }

// packA8x6Rows: no assembly packer in this build.
func packA8x6Rows(dst []float32, a []uint8, ld, kb int) int { return 0 }
