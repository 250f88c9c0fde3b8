package bench

import (
	"fmt"
	"unsafe"
)

// packATiles packs an mb x kb block of row-major A, whose rows are ld
// bytes apart and kb*elem bytes long, for the AMX kernels' tile loads: the
// panels of mr rows in turn, each as chunks of 64 bytes of k (32 bf16 or
// 64 int8 values), a chunk holding its mr rows one after another (64
// bytes, 16 words, a row). A tile load then reads 16 rows of a chunk at a
// stride of 64 bytes. Rows past mb are zero; kb*elem must be a multiple
// of 64. A panel takes mr*kb*elem/4 words, as the driver counts it.
func packATiles(dst []float32, a []byte, ld, mb, kbBytes, mr int) {
	if kbBytes%64 != 0 {
		panic(fmt.Sprintf("bench: AMX packing of %d bytes of k, not a multiple of 64", kbBytes))
	}
	words := kbBytes / 4 // per row of a panel
	chunks := kbBytes / 64
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*words : ir*words+mr*words]
		h := min(mr, mb-ir)
		out := unsafe.Slice((*byte)(unsafe.Pointer(&panel[0])), 4*len(panel))
		for i := 0; i < h; i++ {
			row := a[(ir+i)*ld : (ir+i)*ld+kbBytes]
			for q := range chunks {
				copy(out[(q*mr+i)*64:(q*mr+i)*64+64], row[q*64:q*64+64])
			}
		}
		if h < mr {
			for q := range chunks {
				clear(out[(q*mr+h)*64 : (q+1)*mr*64])
			}
		}
	}
}

// bytesOf views a slice of 1- or 2-byte elements as bytes.
func bytesOf[T uint8 | int8 | uint16](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// amxFor is the AMX kernel get returns when it runs here and every k of
// ks is a whole number of its tiles' k; else the reason it cannot be used
// (for the result's amx param).
func amxFor(get func() (sgemmKernel, error), ks ...int) (sgemmKernel, error) {
	k, err := get()
	if err != nil {
		return k, err
	}
	for _, n := range ks {
		if n%k.tileK != 0 {
			return k, fmt.Errorf("k=%d is not a multiple of the tile's %d k values", n, k.tileK)
		}
	}
	return k, nil
}

// amxBlocking sizes the AMX engine's blocks from the caches, in k values
// of elem bytes:
//   - kc: the B micro-panel (kc x 32 columns) an eighth of L2, as is the
//     A micro-panel: each kernel call then runs 128 chunks of 4 tile
//     products (at 2 MiB of L2) against its fixed cost (the tile
//     configuration, C's four tiles loaded and stored);
//   - mc: the packed A block (mc x kc) half of L2;
//   - nc: the packed B block (kc x nc) a quarter of the last level.
//
// Measured on a 16-core Xeon with AMX (48 KiB L1D, 2 MiB L2), n=2048 and
// 4096, best of 5: 768 bytes of k (a B micro-panel in half of L1D) ran at
// a quarter to a half of 4096 bytes (the C tiles' loads and stores and the
// configuration dominate); 8192 bytes ran 1.00-1.09x 4096 bytes for bf16
// and 1.04-1.37x for int8, 2048 bytes 0.93-1.0x.
// Each is a multiple of the tile (32 rows and columns, 64 bytes of k) and
// kept to sane bounds.
func amxBlocking(c caches, elem int) (mc, kc, nc int) {
	const mr, nr = 32, 32
	l2 := max(c.L2, 256<<10)
	kcBytes := int(l2/8/nr) &^ 63
	kcBytes = min(max(kcBytes, 512), 16384)
	kc = kcBytes / elem
	mc = min(max(mr, int(l2/2/int64(kcBytes))/mr*mr), 64*mr)
	l3 := c.L3
	if l3 <= 0 {
		l3 = 8 * l2
	}
	nc = int(l3/4/int64(kcBytes)) / nr * nr
	nc = min(max(nc, nr), 8192)
	return mc, kc, nc
}

// newGemmAMX is the engine of an AMX kernel: bf16 (k in pairs) or int8
// (quad, k in quads), blocked by amxBlocking. With 2 row tiles per thread
// the threads share each packed block of B: packing A for tile loads is a
// copy, and a thread that packed all of A for its own columns (run's
// column split) would copy it once per thread.
func newGemmAMX(kern sgemmKernel, quad bool, threads int, c caches) *gemm {
	g := newGemm(kern, !quad, threads)
	g.quad = quad
	elem := 2
	if quad {
		elem = 1
	}
	g.mc, g.kc, g.nc = amxBlocking(c, elem)
	g.shareTiles = 2
	return g
}
