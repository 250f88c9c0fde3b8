//go:build !amd64 || purego

package bench

func sgemmKernels() []sgemmKernel { return []sgemmKernel{genericSgemmKernel()} }

func bf16Kernel() (sgemmKernel, bool) { return sgemmKernel{}, false }

func streamKernels() (streamImpl, bool) { return genericStream(), false }

func saxpy(y, x []float32, alpha float32) {
	for i := range y {
		y[i] += alpha * x[i]
	}
}
