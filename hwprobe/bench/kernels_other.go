//go:build !amd64 || purego

package bench

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
