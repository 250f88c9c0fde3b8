//go:build amd64 && !purego

package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The assembly A packers against the plain loop, word for word, with the
// words past the panel left alone: every kb around the 16-step main loop.
func TestPackRows14(t *testing.T) {
	if m := asmMissing(); m != "" {
		t.Skipf("AVX-512 packer not tested: %s", m)
	}
	const mr, guard = 14, 32
	r := rand.New(rand.NewPCG(5, 6))
	for _, kb := range []int{1, 2, 15, 16, 17, 31, 32, 33, 47, 64, 100, 1024, 1031} {
		for _, ld := range []int{kb, kb + 3, 4096} {
			for _, alpha := range []float32{1, -0.5} {
				t.Run(fmt.Sprintf("kb%d/ld%d/alpha%g", kb, ld, alpha), func(t *testing.T) {
					src := randMat(r, (mr-1)*ld+kb)
					dst := make([]float32, mr*kb+guard)
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					packRows14(dst[:mr*kb], src, ld, kb, alpha)
					for i := range mr {
						for p := range kb {
							if got, want := dst[p*mr+i], alpha*src[i*ld+p]; got != want {
								t.Fatalf("row %d step %d: %g, want %g", i, p, got, want)
							}
						}
					}
					for i, v := range dst[mr*kb:] {
						if !math.IsNaN(float64(v)) {
							t.Fatalf("word %d past the panel written: %g", i, v)
						}
					}
				})
			}
		}
	}
}

func TestPackRows16x14(t *testing.T) {
	if m := asmMissing(); m != "" {
		t.Skipf("AVX-512 packer not tested: %s", m)
	}
	const mr, guard = 14, 32
	r := rand.New(rand.NewPCG(7, 8))
	for _, kb := range []int{1, 2, 3, 31, 32, 33, 34, 63, 65, 200, 1024, 1031} {
		for _, ld := range []int{kb, kb + 5, 4096} {
			t.Run(fmt.Sprintf("kb%d/ld%d", kb, ld), func(t *testing.T) {
				src := toBF16Slice(randMat(r, (mr-1)*ld+kb))
				kp := (kb + 1) / 2
				dst := make([]float32, mr*kp+guard)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				packRows16x14(dst[:mr*kp], src, ld, kb)
				for i := range mr {
					for p := range kp {
						want := uint32(src[i*ld+2*p])
						if 2*p+1 < kb {
							want |= uint32(src[i*ld+2*p+1]) << 16
						}
						if got := math.Float32bits(dst[p*mr+i]); got != want {
							t.Fatalf("row %d pair %d: %#x, want %#x", i, p, got, want)
						}
					}
				}
				for i, v := range dst[mr*kp:] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("word %d past the panel written: %g", i, v)
					}
				}
			})
		}
	}
}
