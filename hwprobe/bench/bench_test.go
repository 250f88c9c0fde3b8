package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkStream(b *testing.B) {
	impl, _ := streamKernels()
	for _, im := range []streamImpl{impl, genericStream()} {
		b.Run(im.name, func(b *testing.B) {
			n := 4 << 20
			x, y, z := alignedFloat64(n), alignedFloat64(n), alignedFloat64(n)
			b.SetBytes(int64(24 * n))
			for range b.N {
				im.triad(x, y, z, 3)
			}
		})
	}
}

func BenchmarkMLPTrainStep(b *testing.B) {
	for _, batch := range []int{64, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			m := newMLP([]int{1024, 1024, 1024, 1024}, newGemm(bestSgemmKernel(), false, 0), 1)
			r := rand.New(rand.NewPCG(1, 2))
			x, y := randMat(r, batch*1024), randMat(r, batch*1024)
			m.trainStep(x, y, batch, 1e-3)
			b.ResetTimer()
			for range b.N {
				m.trainStep(x, y, batch, 1e-3)
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func BenchmarkMLPInferBatch1(b *testing.B) {
	m := newMLP([]int{1024, 1024, 1024, 1024}, newGemm(bestSgemmKernel(), false, 0), 1)
	defer m.close()
	x := randMat(rand.New(rand.NewPCG(1, 2)), 1024)
	m.forward(x, 1)
	b.ResetTimer()
	for range b.N {
		m.forward(x, 1)
	}
}
