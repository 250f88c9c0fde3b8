package bench

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// sgemmKernel is one micro-kernel: it adds the product of a packed mr x k
// panel of A and a packed k x nr panel of B into the mr x nr tile of C at c
// (row-major, leading dimension ldc).
type sgemmKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a, b, c *float32, ldc int)
	// set, when set, is fn storing the product over the tile instead of
	// adding it: the first k block of a product with beta 0 then neither
	// clears nor reads C.
	set func(k int, a, b, c *float32, ldc int)
	// fnFar and setFar, when set, are fn and set prefetching B ahead of
	// their reads, for B packed long before the product (PackB: a
	// network's weights), which streams from L3 or memory a micro-panel
	// at a time; B packed by the product itself is in cache, and the plain
	// forms serve it.
	fnFar, setFar func(k int, a, b, c *float32, ldc int)
	// packRows, when set, packs alpha times a full mr x kb panel of
	// row-major A (rows ld apart, src holding all of them) as packA does.
	packRows func(dst, src []float32, ld, kb int, alpha float32)
	// packRows16, when set, packs a full mr x kb panel of row-major bf16 A
	// (rows ld apart) as packA16 does.
	packRows16 func(dst []float32, src []uint16, ld, kb int)
	// packPair, when set (nr = 32), packs one k pair of row-major bf16 B,
	// rows lo and hi, across whole panels stride words apart as packB16
	// does.
	packPair func(dst []float32, lo, hi []uint16, panels, stride int)
	// packRows8, when set, packs a full mr x kb panel of row-major u8 A
	// (rows ld bytes apart) as packA8 does.
	packRows8 func(dst []float32, src []uint8, ld, kb int)
	// pairs marks an int8 kernel that sums u8 x s8 products in pairs
	// into int16 with saturation (AVX2's VPMADDUBSW) before widening:
	// exact only while every pair sum fits int16, so for B (the
	// weights) in [-i8PairsB, i8PairsB].
	pairs bool
	// packQuad, when set (nr 32 or 16), packs one k quad of row-major s8 B
	// (rows ld bytes apart) across whole panels stride words apart as
	// packB8 does.
	packQuad func(dst []float32, src []int8, ld, panels, stride int)
	// part, when set, is fn for the first partRows rows of the tile only
	// (A still packed mr rows a step): the last row tile of a product
	// with a few rows left takes it.
	part     func(k int, a, b, c *float32, ldc int)
	partRows int
	// tileK, when set, marks an AMX kernel: A is packed for tile loads
	// (packATiles) and every k block is a multiple of tileK values.
	tileK int
}

// gemm is a BLIS-style blocked GEMM for row-major float32 matrices: B is
// packed into kc x nc blocks of kc x nr micro-panels, A into mc x kc blocks
// of mr-row micro-panels that stay in L2, and each B micro-panel meets the
// A block's micro-panels in turn (see newGemm for the sizes). With enough
// rows the threads split C by rows and share each packed block of B;
// otherwise they split it by columns. bf16 engines round the packed
// operands to bfloat16 and accumulate in fp32.
// A gemm reuses its packing buffers and is not safe for concurrent use.
type gemm struct {
	kern sgemmKernel
	bf16 bool
	// quad: the int8 engine (newGemmI8): A u8, B s8, C int32 (held in
	// the float32 slices as bits), k packed in quads, one word a quad.
	quad       bool
	mc, kc, nc int
	threads    int
	// team, when set, runs the column split of small products (run)
	// instead of a goroutine per part: its workers spin between jobs, so
	// back-to-back products (a network's layers) do not wait for parked
	// goroutines to wake. Its owner closes it.
	team *team
	// shareTiles is the number of row tiles per thread from which run
	// shares packed blocks of B between the threads (0: 16).
	shareTiles int
	work       []gemmWork
	shared     []float32 // packed block of B shared by the threads
	sharedA    []float32 // all of A, packed once for the threads (runPackedA)
}

type gemmWork struct {
	packA, packB, tile []float32
}

func newGemm(kern sgemmKernel, bf16 bool, threads int) *gemm {
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	// kc: 1024 packed k steps (fp32 values). The B
	// micro-panel (kc x nr, 128 KiB) then streams from L2 like the A
	// micro-panel (the kernel's loads are far below L2 bandwidth), and
	// each C tile is read and written k/kc times. At n=2048 on Zen 5
	// (48 KiB L1, 1 MiB L2), 2 threads, interleaved: kc=512 ran 1.1-1.2x
	// kc=256 (an L1-resident B micro-panel), and kc=1024 1.02-1.03x kc=512
	// (1.03-1.09x at n=4096). mc: about 280 KiB of packed A per block,
	// about a quarter of a 1 MiB L2 (mc made no measurable difference
	// between 56 and 126 rows).
	// nc: the packed block of B (kc x nc) is kept to 8 MiB, a quarter of
	// a Zen CCD's 32 MiB L3 (the host shares it, and this VM's CPUID does
	// not report it): nc = 2048. At n=4096, fp32, best of 12 interleaved
	// runs each: nc=2048 408 GFLOP/s, nc=4096 (a 16 MiB block) 401.
	// bf16 packs k in pairs, one 32-bit word a pair, and keeps the same
	// sizes in words: 1024 pairs (kc = 2048 values), mc 70, nc 2048. In
	// one process, 2 threads, 4 interleaved rounds (best of 3 each):
	// 800 GFLOP/s at n=4096 and 810 at n=2048, against 775 and 783 for
	// 512 pairs with mc 140 and nc 4096 (its earlier sizes); 1536 values
	// ran 784 and 801.
	// Those sizes are the AVX-512 kernel's (nr 32). They hold on Intel
	// too: on 16 cores of a Xeon with AMX (48 KiB L1D, 2 MiB L2),
	// 2026-11-28, best of 9 in 3 interleaved rounds, mc 70, kc 1024, nc
	// 2048 ran 1071 GFLOP/s at n=2048 and 1470 at n=4096; the sizes
	// fp32Blocking's proportions give there from L2 (kc 2048, mc 56, nc
	// 3360) 1032 and 1421, kc 512 1041 and 1346, mc 112 1069 and 1325.
	// fp32 kernels of 16 columns or fewer (AVX2's 6x16, the Go one) take
	// theirs from the caches (fp32Blocking).
	kp := 1024
	g := &gemm{kern: kern, bf16: bf16, threads: threads, kc: kp}
	if bf16 {
		g.kc = 2 * kp
	}
	g.mc = max(kern.mr, (280<<10)/(4*kp)/kern.mr*kern.mr)
	g.nc = max(kern.nr, (8<<20)/(4*kp)/kern.nr*kern.nr)
	if !bf16 && kern.nr <= 16 && kern.tileK == 0 {
		g.mc, g.kc, g.nc = fp32Blocking(hostCaches(), kern.mr, kern.nr)
	}
	return g
}

// fp32Blocking sizes the blocks of an fp32 kernel of at most 16 columns
// from the caches:
//   - kc: the B micro-panel (kc x nr values) the size of L1D (512 at 32
//     KiB and nr 16): twice BLIS's Zen 3 kc, so that C, read and written
//     once per k block, is read and written half as often;
//   - mc: the packed A block (mc x kc) a third of L2 (84 rows at 512 KiB);
//   - nc: the packed B block (kc x nc) a sixteenth of the last level (1024
//     columns at 32 MiB): at n=4096 the column block of C that the k
//     blocks pass over (16 MiB) then stays in the last level, where the
//     whole of C (64 MiB) does not.
//
// Measured on a 2-vCPU Zen 3 (32 KiB L1D, 512 KiB L2, 32 MiB L3), the
// AVX2 6x16 kernel, 2 threads, best of 9 in 3 interleaved rounds
// (TestSgemmSweep), 2026-11-28: mc 84, kc 512, nc 1024 ran 1.02-1.05x
// the sizes this rule gave before, BLIS's (mc 126, kc 256, nc 8192), at
// n=2048 and 1.03-1.16x at n=4096, in each of 4 sweeps; kc 384, nc 512
// to 2048 and mc 60 to 126 ran within the sweeps' spread of it (-13% to
// +9% in single sweeps), none ahead in every sweep. Earlier, kc 256-384
// ran 1.0-1.3x the AVX-512 kernel's kc of 1024.
// Each is a multiple of the tile and kept to sane bounds.
func fp32Blocking(c caches, mr, nr int) (mc, kc, nc int) {
	l1 := max(c.L1D, 16<<10)
	kc = int(l1/int64(4*nr)) &^ 63
	kc = min(max(kc, 128), 1024)
	l2 := max(c.L2, 256<<10)
	mc = min(max(mr, int(l2/3/int64(4*kc))/mr*mr), 64*mr)
	l3 := c.L3
	if l3 <= 0 {
		l3 = 8 * l2
	}
	nc = int(l3/16/int64(4*kc)) / nr * nr
	nc = min(max(nc, 512/nr*nr), 8192/nr*nr) // at least 512 columns: A is packed once per column block
	return mc, kc, nc
}

// op describes one operand: element (i, j) of the logical matrix is
// data[i*rs+j*cs].
type op struct {
	data   []float32
	rs, cs int
}

func rowMajor(data []float32, ld int, trans bool) op {
	if trans {
		return op{data, 1, ld}
	}
	return op{data, ld, 1}
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices,
// where op(A) is m x k and op(B) is k x n. A bf16 engine rounds A and B to
// bfloat16 while packing.
func (g *gemm) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g.run(m, n, k, packers{a: g.packerA(a, lda, transA, alpha), b: g.packerB(b, ldb, transB)}, beta, c, ldc)
}

func (g *gemm) packerA(a []float32, lda int, trans bool, alpha float32) func(dst []float32, i, p, mb, kb int) {
	A, mr := rowMajor(a, lda, trans), g.kern.mr
	if g.kern.tileK > 0 {
		panic("bench: fp32 operands on an AMX engine (Bgemm and I8gemm take them)")
	}
	if g.bf16 {
		return func(dst []float32, i, p, mb, kb int) { packAbf16(dst, A.at(i, p), mb, kb, mr, alpha) }
	}
	return func(dst []float32, i, p, mb, kb int) { packA(dst, A.at(i, p), mb, kb, mr, alpha, g.kern.packRows) }
}

func (g *gemm) packerB(b []float32, ldb int, trans bool) func(dst []float32, p, j, kb, nb int) {
	B, nr := rowMajor(b, ldb, trans), g.kern.nr
	if g.bf16 {
		return func(dst []float32, p, j, kb, nb int) { packBbf16(dst, B.at(p, j), kb, nb, nr) }
	}
	return func(dst []float32, p, j, kb, nb int) { packB(dst, B.at(p, j), kb, nb, nr) }
}

// packedB is a k x n op(B) packed once for many products (PackB): per k
// block of the engine's kc, all of its columns in the kernel's panels.
type packedB struct {
	k, n, kc int
	nr       int         // panel width
	blocks   [][]float32 // by k block
}

// PackB packs op(B) (k x n, row-major with leading dimension ldb) for
// SgemmPacked, which then skips packing B: the weights of a network that
// serves many batches are packed once, as inference engines do.
func (g *gemm) PackB(transB bool, k, n int, b []float32, ldb int) *packedB {
	kc, nr := min(g.kc, max(k, 1)), g.kern.nr
	pb := &packedB{k: k, n: n, kc: kc, nr: nr}
	pack := g.packerB(b, ldb, transB)
	panels := (n + nr - 1) / nr
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		blk := make([]float32, panels*nr*g.packedK(kb))
		pack(blk, pc, 0, kb, n)
		pb.blocks = append(pb.blocks, blk)
	}
	return pb
}

// SgemmPacked is Sgemm with B packed by PackB on this engine: C =
// alpha*op(A)*B + beta*C for op(A) m x k.
func (g *gemm) SgemmPacked(transA bool, m int, alpha float32, a []float32, lda int, b *packedB, beta float32, c []float32, ldc int) {
	g.sgemmPacked(transA, m, alpha, a, lda, b, beta, c, ldc, nil)
}

// sgemmPacked is SgemmPacked that calls done(j0, j1) once C's columns
// [j0, j1) are final, for every row (see packers.done): a network's layer
// adds its bias and activation there, on the thread that computed them.
func (g *gemm) sgemmPacked(transA bool, m int, alpha float32, a []float32, lda int, b *packedB, beta float32, c []float32, ldc int, done func(j0, j1 int)) {
	if b.kc != min(g.kc, max(b.k, 1)) || b.nr != g.kern.nr {
		panic("bench: B packed by another engine")
	}
	g.run(m, b.n, b.k, packers{
		a:      g.packerA(a, lda, transA, alpha),
		packed: b.panels(g),
		done:   done,
	}, beta, c, ldc)
}

// panels returns the packers.packed of b on the engine g that packed it.
func (b *packedB) panels(g *gemm) func(p, j int) []float32 {
	return func(p, j int) []float32 {
		blk := b.blocks[p/b.kc]
		return blk[j/b.nr*b.nr*g.packedK(min(b.kc, b.k-p)):]
	}
}

// Bgemm computes C = A*B for row-major bfloat16 A (m x k) and B (k x n),
// given as raw bf16 bits, with fp32 accumulation and an fp32 C. A bf16
// engine multiplies the bf16 values with its bf16 instructions; an fp32
// engine (a CPU without them) widens each to the fp32 of the same value as
// it packs, and multiplies in fp32: the same products, at the fp32 rate.
func (g *gemm) Bgemm(m, n, k int, a []uint16, lda int, b []uint16, ldb int, c []float32, ldc int) {
	mr, nr := g.kern.mr, g.kern.nr
	if !g.bf16 && !g.quad && g.kern.tileK == 0 {
		g.run(m, n, k, packers{
			a: func(dst []float32, i, p, mb, kb int) { packAWide(dst, a[i*lda+p:], lda, mb, kb, mr) },
			b: func(dst []float32, p, j, kb, nb int) { packBWide(dst, b[p*ldb+j:], ldb, kb, nb, nr) },
		}, 0, c, ldc)
		return
	}
	packAs := func(dst []float32, i, p, mb, kb int) { packA16(dst, a[i*lda+p:], lda, mb, kb, mr, g.kern.packRows16) }
	if g.kern.tileK > 0 {
		g.checkTileK(k)
		packAs = func(dst []float32, i, p, mb, kb int) { packATiles(dst, bytesOf(a[i*lda+p:]), 2*lda, mb, 2*kb, mr) }
	}
	g.run(m, n, k, packers{
		a: packAs,
		b: func(dst []float32, p, j, kb, nb int) { packB16(dst, b[p*ldb+j:], ldb, kb, nb, nr, g.kern.packPair) },
	}, 0, c, ldc)
}

// checkTileK panics where an AMX engine is given a k its tiles cannot
// cover: the callers choose AMX only for such k.
func (g *gemm) checkTileK(k int) {
	if t := g.kern.tileK; t > 0 && k%t != 0 {
		panic(fmt.Sprintf("bench: k=%d on the %s engine, which needs a multiple of %d", k, g.kern.name, t))
	}
}

// packers pack the block of op(A) at row i, column p (mb x kb) and of op(B)
// at row p, column j (kb x nb) into the kernel's panel layout.
type packers struct {
	a func(dst []float32, i, p, mb, kb int)
	b func(dst []float32, p, j, kb, nb int)
	// packed, when set, replaces b: B is packed already (PackB), and
	// packed returns its block at row p, column j (j a multiple of nr).
	packed func(p, j int) []float32
	// done, when set, is called once C's columns [j0, j1) are final in
	// every row: by each thread for the columns it computed where the
	// threads split C by columns on a shared A (runPackedA), else once,
	// for all of C, after the product.
	done func(j0, j1 int)
}

// run splits the product between threads. With enough rows of C (at
// least 16 row tiles per thread), the threads share each packed block of B
// (each packs a share of its panels) and split the rows, so that A is
// packed once; otherwise (few rows, e.g. MLP batches) each thread takes
// whole tiles of columns. Measured interleaved on 2 threads, n=k=1024: at
// m=64 the column split ran 1.16x the shared one, at m=256 the same, at
// m=512 0.98x; at m=n=k=2048 the shared one ran 1.04-1.05x. In the column
// split each thread packs its own B; A too, unless B is packed already
// (PackB) and A is small (at most 4 row blocks of mc, and sharedAMax):
// then A is packed once for all of them (runPackedA).
func (g *gemm) run(m, n, k int, pk packers, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if g.split(m, n, k, pk, beta, c, ldc) && pk.done != nil {
		pk.done(0, n)
	}
}

// split runs the product as run describes; it returns false where it
// called pk.done itself (runPackedA).
func (g *gemm) split(m, n, k int, pk packers, beta float32, c []float32, ldc int) bool {
	t := g.threads
	tilesM := (m + g.kern.mr - 1) / g.kern.mr
	share := g.shareTiles
	if share <= 0 {
		share = 16
	}
	if t > 1 && tilesM >= share*t && k > 0 {
		g.runShared(m, n, k, pk, beta, c, ldc)
		return true
	}
	type part struct{ i0, i1, j0, j1 int }
	parts := make([]part, 0, t)
	if tilesN := (n + g.kern.nr - 1) / g.kern.nr; tilesN >= 2*t || tilesN >= tilesM {
		t = min(t, tilesN)
		if t > 1 && k > 0 && pk.packed != nil && tilesM*g.kern.mr <= 4*g.mc && tilesM*g.kern.mr*g.packedK(k) <= sharedAMax {
			g.runPackedA(m, n, k, pk, beta, c, ldc)
			return false
		}
		for w := 0; w < t; w++ {
			parts = append(parts, part{0, m, min(n, tilesN*w/t*g.kern.nr), min(n, tilesN*(w+1)/t*g.kern.nr)})
		}
	} else {
		t = min(t, tilesM)
		for w := 0; w < t; w++ {
			parts = append(parts, part{min(m, tilesM*w/t*g.kern.mr), min(m, tilesM*(w+1)/t*g.kern.mr), 0, n})
		}
	}
	for len(g.work) < len(parts) {
		g.work = append(g.work, gemmWork{})
	}
	do := func(w int, p part) {
		g.block(&g.work[w], p.i0, p.j0, p.i1-p.i0, p.j1-p.j0, k, pk, beta, c[p.i0*ldc+p.j0:], ldc)
	}
	if len(parts) == 1 {
		do(0, parts[0])
		return true
	}
	if g.team != nil && g.team.n >= len(parts) {
		g.team.run(func(w int) {
			if w < len(parts) {
				do(w, parts[w])
			}
		})
		return true
	}
	var wg sync.WaitGroup
	for w, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(w, p)
		}()
	}
	wg.Wait()
	return true
}

// sharedAChunk is the k values of one row panel that runPackedA packs as
// one piece of work: a multiple of 64, so a whole number of k pairs
// (bf16), k quads (int8) and 64-byte tile rows (AMX), and so the piece's
// place in the panel is packedK(offset)*mr words on from the panel's
// start, k-major as every engine packs A.
const sharedAChunk = 256

// sharedAMax is the most words of packed A that runPackedA packs whole:
// 4M (16 MiB; batch 64 of a 1024-wide layer is 70K, with its rows
// rounded up to whole tiles).
const sharedAMax = 4 << 20

// runPackedA is the column split for a B packed already (PackB, PackB8)
// with A packed once for all the threads: at batch 64 of a 1024-wide
// layer each thread of the plain column split packed all 64 x 1024 of A
// for its 2 to 16 panels of B (on 16 threads: 64 columns each), the
// packing repeated 16 times. Here the threads first pack A together,
// whole (every k block), a sharedAChunk of k of one row panel at a time,
// handed out from a counter; each waits until A is packed (a few
// microseconds; a latch), then runs panels of B against all of A, k block by k
// block, and calls pk.done on each panel's columns while they are in
// cache. Each thread has a home range of panels, the same from call to
// call, so that on many cores each keeps its share of a network's
// weights in its own L2 (a 1024 x 3 network's 12 MiB are 768 KiB a core
// on 16); a thread done with its own takes panels left in the others'
// ranges, so one that loses its core for a while on a shared host does
// not hold up the rest. It is used where A is at most 4 row blocks of
// the engine (mc), so that it stays in L2 while each panel passes over
// it. On g.team when it has the workers (they spin between jobs: a
// network's layers run back to back), else on a goroutine per thread.
func (g *gemm) runPackedA(m, n, k int, pk packers, beta float32, c []float32, ldc int) {
	mr, nr := g.kern.mr, g.kern.nr
	tilesM := (m + mr - 1) / mr
	kc := min(g.kc, k)
	blocksK := (k + kc - 1) / kc
	blockWords := tilesM * mr * g.packedK(kc) // a whole k block of A, packed
	g.sharedA = grow(g.sharedA, blockWords*(blocksK-1)+tilesM*mr*g.packedK(k-(blocksK-1)*kc))
	chunks := (kc + sharedAChunk - 1) / sharedAChunk // per row panel and k block, at most
	packUnits := int64(blocksK * tilesM * chunks)
	panels := (n + nr - 1) / nr
	// No more threads than the Go scheduler runs at once: those beyond
	// would only wait for the others' cores.
	t := min(g.threads, runtime.GOMAXPROCS(0), panels)
	store := beta == 0 && g.kern.set != nil
	for len(g.work) < t {
		g.work = append(g.work, gemmWork{})
	}
	// The counters, each on a cache line of its own: A's pieces handed
	// out and packed, and per thread, the panels taken from its range.
	type counter struct {
		atomic.Int64
		_ [56]byte
	}
	ctr := make([]counter, 1+t)
	pack, taken := &ctr[0], ctr[1:]
	// The panels taken at a time, and so the band pk.done gets: 64
	// columns (4 of AVX2's 16-column panels, 2 of AVX-512's 32). One
	// panel a call made the fp32 MLP's bias and ReLU a call per row of 16
	// values: 7% of its batch-64 profile on 2 vCPUs of Zen 3.
	donePanels := max(1, 64/nr)
	var packed latch
	packed.n.Store(packUnits)
	job := func(w int) {
		for {
			u := int(pack.Add(1)) - 1
			if u >= int(packUnits) {
				break
			}
			b, rest := u/(tilesM*chunks), u%(tilesM*chunks)
			ir, p0 := rest/chunks*mr, rest%chunks*sharedAChunk
			pc := b * kc
			if kb := min(kc, k-pc); p0 < kb {
				dst := g.sharedA[b*blockWords+ir*g.packedK(kb)+g.packedK(p0)*mr:]
				pk.a(dst, ir, pc+p0, min(mr, m-ir), min(sharedAChunk, kb-p0))
			}
			packed.done()
		}
		packed.wait()
		wk := &g.work[w]
		wk.tile = grow(wk.tile, mr*nr)
		for v := w; v < w+t; v++ { // its own range, then the others'
			h := v % t
			p0, p1 := panels*h/t, panels*(h+1)/t
			for taken[h].Load() < int64(p1-p0) {
				q0 := p0 + int(taken[h].Add(int64(donePanels))) - donePanels
				if q0 >= p1 {
					break
				}
				q1 := min(q0+donePanels, p1)
				for p := q0; p < q1; p++ {
					j0, j1 := p*nr, min(n, (p+1)*nr)
					if !store {
						scaleC(m, j1-j0, beta, c[j0:], ldc)
					}
					for b := range blocksK {
						pc := b * kc
						g.macro(wk, g.sharedA[b*blockWords:], pk.packed(pc, j0), m, j1-j0, min(kc, k-pc), c[j0:], ldc, store && b == 0, true)
					}
				}
				if pk.done != nil {
					pk.done(q0*nr, min(n, q1*nr))
				}
			}
		}
	}
	if g.team != nil && g.team.n >= t {
		g.team.runN(t, job)
		return
	}
	spread(t, job)
}

// runShared is the blocked algorithm with one shared packed block of B
// per (jc, pc) step: the threads pack the block's panels, wait for each
// other, multiply the mc-row blocks of A against it, and wait again
// before the block is overwritten. Both the B panels (packChunk at a time)
// and the row blocks are handed out from a counter rather than split in
// fixed shares: on a shared host a thread that loses its core for a while
// leaves its share to the others instead of holding them at the barrier.
func (g *gemm) runShared(m, n, k int, pk packers, beta float32, c []float32, ldc int) {
	const packChunk = 8
	mr, nr, t := g.kern.mr, g.kern.nr, g.threads
	tilesM := (m + mr - 1) / mr
	kc := min(g.kc, k)
	nc := min(g.nc, (n+nr-1)/nr*nr)
	// At least one row block per thread: the blocks are the work handed
	// out, and a block of mc rows larger than m/t leaves threads idle (an
	// AMX engine's 256-row blocks at m=2048 on 16 threads kept 8 busy).
	mc := min(g.mc, tilesM*mr, max(mr, (tilesM+t-1)/t*mr))
	mc = balancedTiles(tilesM, mc/mr, t) * mr
	blocksM := (m + mc - 1) / mc
	if pk.packed == nil {
		g.shared = grow(g.shared, g.packedK(kc)*nc)
	}
	for len(g.work) < t {
		g.work = append(g.work, gemmWork{})
	}
	steps := (n + nc - 1) / nc * ((k + kc - 1) / kc)
	next := make([]atomic.Int64, 2*steps) // per step: B panels, A blocks
	store := beta == 0 && g.kern.set != nil
	bar := newBarrier(t)
	worker := func(w int) {
		wk := &g.work[w]
		wk.packA = grow(wk.packA, g.packedK(kc)*mc)
		wk.tile = grow(wk.tile, mr*nr)
		if !store {
			i0, i1 := min(m, tilesM*w/t*mr), min(m, tilesM*(w+1)/t*mr)
			scaleC(i1-i0, n, beta, c[i0*ldc:], ldc)
		}
		step := 0
		for jc := 0; jc < n; jc += nc {
			nb := min(nc, n-jc)
			panels := (nb + nr - 1) / nr
			for pc := 0; pc < k; pc += kc {
				kb := min(kc, k-pc)
				kp := g.packedK(kb)
				shared := g.shared
				if pk.packed != nil {
					shared = pk.packed(pc, jc)
				}
				for ctr := &next[2*step]; pk.packed == nil; {
					p0 := int(ctr.Add(packChunk)) - packChunk
					if p0 >= panels {
						break
					}
					p1 := min(panels, p0+packChunk)
					pk.b(shared[p0*nr*kp:], pc, jc+p0*nr, kb, min(nb, p1*nr)-p0*nr)
				}
				bar.wait()
				for ctr := &next[2*step+1]; ; {
					b := int(ctr.Add(1)) - 1
					if b >= blocksM {
						break
					}
					ic := b * mc
					mb := min(mc, m-ic)
					pk.a(wk.packA, ic, pc, mb, kb)
					g.macro(wk, wk.packA, shared, mb, nb, kb, c[ic*ldc+jc:], ldc, store && pc == 0, pk.packed != nil)
				}
				bar.wait()
				step++
			}
		}
	}
	spread(t, worker)
}

// barrier lets n goroutines wait for each other, any number of times.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n, left int
	gen     int
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n, left: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	gen := b.gen
	if b.left--; b.left == 0 {
		b.left = b.n
		b.gen++
		b.cond.Broadcast()
		return
	}
	for gen == b.gen {
		b.cond.Wait()
	}
}

func (o op) at(i, j int) op { return op{o.data[i*o.rs+j*o.cs:], o.rs, o.cs} }

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// packedK is the number of packed k steps of a block of kb: bf16 packs k
// in pairs, int8 in quads.
func (g *gemm) packedK(kb int) int {
	if g.quad {
		return (kb + 3) / 4
	}
	if g.bf16 {
		return (kb + 1) / 2
	}
	return kb
}

// balancedTiles is the row tiles per block, at most most, for tiles row
// tiles handed out to t threads a block at a time: the fewest tiles on
// the busiest thread (ceil(blocks/t) blocks of the size), the largest
// block among equals. 342 tiles on 2 threads in blocks of up to 21 (n =
// 2048, AVX2, mc 126) made 17 blocks, one thread's 9 against the other's
// 8 at every k step; 18 blocks of 19 tiles split evenly.
func balancedTiles(tiles, most, t int) int {
	best, bestCost := max(most, 1), -1
	for per := max(most, 1); per >= 1 && per >= most/2; per-- {
		blocks := (tiles + per - 1) / per
		if cost := (blocks + t - 1) / t * per; bestCost < 0 || cost < bestCost {
			best, bestCost = per, cost
		}
	}
	return best
}

// block runs the serial blocked algorithm on one thread's share of C: the
// m x n part whose top-left element is (i0, j0) of the whole product.
func (g *gemm) block(w *gemmWork, i0, j0, m, n, k int, pk packers, beta float32, c []float32, ldc int) {
	mr, nr := g.kern.mr, g.kern.nr
	store := beta == 0 && g.kern.set != nil && k > 0
	if !store {
		scaleC(m, n, beta, c, ldc)
	}
	if k == 0 {
		return
	}
	kc := min(g.kc, k)
	nc := min(g.nc, (n+nr-1)/nr*nr)
	mc := min(g.mc, (m+mr-1)/mr*mr)
	if pk.packed == nil {
		w.packB = grow(w.packB, g.packedK(kc)*nc)
	}
	w.packA = grow(w.packA, g.packedK(kc)*mc)
	w.tile = grow(w.tile, mr*nr)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			bp := w.packB
			if pk.packed != nil {
				bp = pk.packed(pc, j0+jc)
			} else {
				pk.b(bp, pc, j0+jc, kb, nb)
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				pk.a(w.packA, i0+ic, pc, mb, kb)
				g.macro(w, w.packA, bp, mb, nb, kb, c[ic*ldc+jc:], ldc, store && pc == 0, pk.packed != nil)
			}
		}
	}
}

// macro multiplies the packed mb x kb block of A in packA by the packed
// kb x nb block packB into the mb x nb part of C at c (over it with
// store, which needs kern.set): the B micro-panel stays while the A
// micro-panels pass under it. w holds the tile for partial tiles. far
// marks B packed before the product (PackB), for the kernel's fnFar and
// setFar where it has them.
func (g *gemm) macro(w *gemmWork, packA, packB []float32, mb, nb, kb int, c []float32, ldc int, store, far bool) {
	mr, nr := g.kern.mr, g.kern.nr
	kp := g.packedK(kb)
	fn, set := g.kern.fn, g.kern.set
	if far && g.kern.fnFar != nil {
		fn, set = g.kern.fnFar, g.kern.setFar
	}
	if store {
		fn = set
	}
	for jr := 0; jr < nb; jr += nr {
		bp := &packB[jr/nr*nr*kp]
		for ir := 0; ir < mb; ir += mr {
			ap := &packA[ir/mr*mr*kp]
			ci := ir*ldc + jr
			if ir+mr <= mb && jr+nr <= nb {
				fn(kb, ap, bp, &c[ci], ldc)
				continue
			}
			clear(w.tile)
			part := g.kern.fn
			if g.kern.part != nil && mb-ir <= g.kern.partRows {
				part = g.kern.part
			}
			part(kb, ap, bp, &w.tile[0], nr)
			for i := 0; i < min(mr, mb-ir); i++ {
				row := c[ci+i*ldc : ci+i*ldc+min(nr, nb-jr)]
				if store {
					copy(row, w.tile[i*nr:])
					continue
				}
				if g.quad {
					addInt32(row, w.tile[i*nr:i*nr+len(row)])
					continue
				}
				for j := range row {
					row[j] += w.tile[i*nr+j]
				}
			}
		}
	}
}

func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// packB copies the kb x nb block of B into panels of nr columns, each stored
// k-major (nr values per k step) and zero-padded to a whole panel.
func packB(dst []float32, B op, kb, nb, nr int) {
	if B.cs == 1 && nr == 32 {
		// Row by row: the source is read in order (a panel at a time
		// would touch a new page of B on every row).
		full := nb / nr * nr
		for p := 0; p < kb; p++ {
			row := B.data[p*B.rs : p*B.rs+full]
			for jr := 0; jr < full; jr += nr {
				*(*[32]float32)(dst[jr*kb+p*nr:]) = *(*[32]float32)(row[jr:])
			}
		}
		if full < nb {
			packBPanels(dst[full*kb:], B.at(0, full), kb, nb-full, nr)
		}
		return
	}
	packBPanels(dst, B, kb, nb, nr)
}

// packBPanels is packB a panel at a time.
func packBPanels(dst []float32, B op, kb, nb, nr int) {
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kb : jr*kb+nr*kb]
		w := min(nr, nb-jr)
		if B.cs == 1 && w == nr {
			if nr == 16 { // fixed-size moves, no memmove call per row
				if packPanel16Rows(panel, B.data[jr:], B.rs, kb) {
					continue
				}
				for p := 0; p < kb; p++ {
					*(*[16]float32)(panel[p*16:]) = *(*[16]float32)(B.data[p*B.rs+jr:])
				}
				continue
			}
			for p := 0; p < kb; p++ {
				copy(panel[p*nr:p*nr+nr], B.data[p*B.rs+jr:])
			}
			continue
		}
		for p := 0; p < kb; p++ {
			d := panel[p*nr : p*nr+nr]
			for j := 0; j < w; j++ {
				d[j] = B.data[p*B.rs+(jr+j)*B.cs]
			}
			clear(d[w:])
		}
	}
}

// packA copies alpha times the mb x kb block of A into panels of mr rows,
// each stored k-major (mr values per k step) and zero-padded. rows, when
// set, packs the full panels of a row-major A.
func packA(dst []float32, A op, mb, kb, mr int, alpha float32, rows func(dst, src []float32, ld, kb int, alpha float32)) {
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kb : ir*kb+mr*kb]
		h := min(mr, mb-ir)
		if rows != nil && A.cs == 1 && h == mr {
			rows(panel, A.data[ir*A.rs:], A.rs, kb, alpha)
			continue
		}
		if A.rs == 1 && h == mr && alpha == 1 {
			for p := 0; p < kb; p++ {
				copy(panel[p*mr:p*mr+mr], A.data[p*A.cs+ir:])
			}
			continue
		}
		if A.rs == 1 && h == mr {
			for p := 0; p < kb; p++ {
				src := A.data[p*A.cs+ir : p*A.cs+ir+mr]
				d := panel[p*mr : p*mr+mr]
				for i, v := range src {
					d[i] = alpha * v
				}
			}
			continue
		}
		if A.cs == 1 && h == mr && mr == 6 && alpha == 1 {
			packA6(panel, A.data[ir*A.rs:], A.rs, kb)
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := A.data[(ir+i)*A.rs:]
			if A.cs == 1 {
				row = row[:kb]
				if alpha == 1 {
					for p, v := range row {
						panel[p*mr+i] = v
					}
					continue
				}
				for p, v := range row {
					panel[p*mr+i] = alpha * v
				}
				continue
			}
			for p := 0; p < kb; p++ {
				panel[p*mr+i] = alpha * row[p*A.cs]
			}
		}
	}
}

// toBF16 rounds to the nearest bfloat16, ties to even.
func toBF16(f float32) uint32 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return 0x7fc0 // NaN
	}
	return (u + 0x7fff + (u>>16)&1) >> 16
}

func fromBF16(h uint32) float32 { return math.Float32frombits(h << 16) }

func pairBF16(lo, hi float32) float32 { return math.Float32frombits(toBF16(lo) | toBF16(hi)<<16) }

// packBbf16 packs B for the bf16 kernel: per k pair, nr words each holding
// the two bf16 values of one column (k even in the low half).
func packBbf16(dst []float32, B op, kb, nb, nr int) {
	kp := (kb + 1) / 2
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kp : jr*kp+nr*kp]
		w := min(nr, nb-jr)
		for p := 0; p < kp; p++ {
			d := panel[p*nr : p*nr+nr]
			r0 := B.data[2*p*B.rs:]
			for j := 0; j < w; j++ {
				var hi float32
				if 2*p+1 < kb {
					hi = r0[B.rs+(jr+j)*B.cs]
				}
				d[j] = pairBF16(r0[(jr+j)*B.cs], hi)
			}
			clear(d[w:])
		}
	}
}

// packAbf16 packs alpha*A for the bf16 kernel: per k pair, mr words each
// holding the two bf16 values of one row.
func packAbf16(dst []float32, A op, mb, kb, mr int, alpha float32) {
	kp := (kb + 1) / 2
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kp : ir*kp+mr*kp]
		h := min(mr, mb-ir)
		if A.cs == 1 && h == mr && mr == 6 && alpha == 1 {
			packA6(panel, A.data[ir*A.rs:], A.rs, kb)
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := A.data[(ir+i)*A.rs:]
			for p := 0; p < kp; p++ {
				var hi float32
				if 2*p+1 < kb {
					hi = alpha * row[(2*p+1)*A.cs]
				}
				panel[p*mr+i] = pairBF16(alpha*row[2*p*A.cs], hi)
			}
		}
	}
}

// packB16 packs a kb x nb block of row-major bf16 B (leading dimension
// ld) for the bf16 kernel: per k pair, one word per column. pair, when
// set, packs the whole pairs of the whole panels a pair at a time, reading
// B's rows in order.
func packB16(dst []float32, b []uint16, ld, kb, nb, nr int, pair func(dst []float32, lo, hi []uint16, panels, stride int)) {
	kp := (kb + 1) / 2
	start := 0
	if pair != nil && nr == 32 && kb >= 2 {
		panels := nb / nr
		for p := 0; p < kb/2; p++ {
			pair(dst[p*nr:], b[2*p*ld:], b[(2*p+1)*ld:], panels, nr*kp)
		}
		if kb%2 == 1 {
			lo := b[(kb-1)*ld:]
			for jr := 0; jr < panels*nr; jr += nr {
				d := dst[jr*kp+(kp-1)*nr : jr*kp+kp*nr]
				for j := range d {
					d[j] = math.Float32frombits(uint32(lo[jr+j]))
				}
			}
		}
		start = panels * nr
	}
	for jr := start; jr < nb; jr += nr {
		panel := dst[jr*kp : jr*kp+nr*kp]
		w := min(nr, nb-jr)
		for p := 0; p < kp; p++ {
			d := panel[p*nr : p*nr+nr]
			lo := b[2*p*ld+jr : 2*p*ld+jr+w]
			if 2*p+1 < kb {
				hi := b[(2*p+1)*ld+jr : (2*p+1)*ld+jr+w]
				for j := range lo {
					d[j] = math.Float32frombits(uint32(lo[j]) | uint32(hi[j])<<16)
				}
			} else {
				for j := range lo {
					d[j] = math.Float32frombits(uint32(lo[j]))
				}
			}
			clear(d[w:])
		}
	}
}

// packA16 packs an mb x kb block of row-major bf16 A (leading dimension
// ld) for the bf16 kernel: per k pair, one word per row. rows, when set,
// packs the full panels.
func packA16(dst []float32, a []uint16, ld, mb, kb, mr int, rows func(dst []float32, src []uint16, ld, kb int)) {
	kp := (kb + 1) / 2
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kp : ir*kp+mr*kp]
		h := min(mr, mb-ir)
		if rows != nil && h == mr {
			rows(panel, a[ir*ld:], ld, kb)
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := a[(ir+i)*ld : (ir+i)*ld+kb]
			p := 0
			for ; 2*p+1 < kb; p++ {
				panel[p*mr+i] = math.Float32frombits(uint32(row[2*p]) | uint32(row[2*p+1])<<16)
			}
			if p < kp {
				panel[p*mr+i] = math.Float32frombits(uint32(row[2*p]))
			}
		}
	}
}

// packBWide packs a kb x nb block of row-major bf16 B (leading dimension
// ld) for an fp32 kernel, as packB does, each value widened to fp32.
func packBWide(dst []float32, b []uint16, ld, kb, nb, nr int) {
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kb : jr*kb+nr*kb]
		w := min(nr, nb-jr)
		if w == 16 && nr == 16 && packPanel16wRows(panel, b[jr:], ld, kb) {
			continue
		}
		for p := 0; p < kb; p++ {
			d := panel[p*nr : p*nr+nr]
			for j, v := range b[p*ld+jr : p*ld+jr+w] {
				d[j] = fromBF16(uint32(v))
			}
			clear(d[w:])
		}
	}
}

// packAWide packs an mb x kb block of row-major bf16 A (leading dimension
// ld) for an fp32 kernel, as packA does, each value widened to fp32.
func packAWide(dst []float32, a []uint16, ld, mb, kb, mr int) {
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kb : ir*kb+mr*kb]
		h := min(mr, mb-ir)
		if h == 6 && mr == 6 {
			packA6Wide(panel, a[ir*ld:], ld, kb)
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			for p, v := range a[(ir+i)*ld : (ir+i)*ld+kb] {
				panel[p*mr+i] = fromBF16(uint32(v))
			}
		}
	}
}

// packA6Wide is packA6 from bf16 rows.
func packA6Wide(dst []float32, a []uint16, ld, kb int) {
	r0, r1, r2 := a[:kb], a[ld:ld+kb], a[2*ld:2*ld+kb]
	r3, r4, r5 := a[3*ld:3*ld+kb], a[4*ld:4*ld+kb], a[5*ld:5*ld+kb]
	dst = dst[:6*kb]
	for p := packA6WideRows(dst, a, ld, kb); p < kb; p++ {
		d := (*[6]float32)(dst[6*p:])
		d[0], d[1], d[2] = fromBF16(uint32(r0[p])), fromBF16(uint32(r1[p])), fromBF16(uint32(r2[p]))
		d[3], d[4], d[5] = fromBF16(uint32(r3[p])), fromBF16(uint32(r4[p])), fromBF16(uint32(r5[p]))
	}
}

// genericSgemmKernel is the portable 4x8 fallback written in Go.
func genericSgemmKernel() sgemmKernel {
	const mr, nr = 4, 8
	return sgemmKernel{name: "builtin-go", mr: mr, nr: nr, fn: func(k int, a, b, c *float32, ldc int) {
		as := unsafe.Slice(a, mr*k)
		bs := unsafe.Slice(b, nr*k)
		var acc [mr][nr]float32
		for p := 0; p < k; p++ {
			bp := bs[p*nr : p*nr+nr]
			ap := as[p*mr : p*mr+mr]
			for i := range mr {
				ai := ap[i]
				for j := range nr {
					acc[i][j] += ai * bp[j]
				}
			}
		}
		cs := unsafe.Slice(c, (mr-1)*ldc+nr)
		for i := range mr {
			for j := range nr {
				cs[i*ldc+j] += acc[i][j]
			}
		}
	}}
}

// packA6 packs a 6 x kb panel of row-major A (rows ld apart), six rows a
// k step, for the AVX2 kernel's 6-row panels.
func packA6(dst, a []float32, ld, kb int) {
	r0, r1, r2 := a[:kb], a[ld:ld+kb], a[2*ld:2*ld+kb]
	r3, r4, r5 := a[3*ld:3*ld+kb], a[4*ld:4*ld+kb], a[5*ld:5*ld+kb]
	dst = dst[:6*kb]
	for p := packA6Rows(dst, a, ld, kb); p < kb; p++ {
		d := (*[6]float32)(dst[6*p:])
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
	}
}
