package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// gpuNames are the GPU benchmarks, in Names order.
func gpuNames() []string {
	var out []string
	for _, n := range Names() {
		if strings.HasPrefix(n, "gpu_") {
			out = append(out, n)
		}
	}
	return out
}

// gpuDevice is one CUDA device as the benchmarks see it.
type gpuDevice struct {
	index        int
	name         string
	major, minor int
	peak         gpuPeak
	peakKnown    bool
}

func (d gpuDevice) label() string { return "gpu" + strconv.Itoa(d.index) }

func (d gpuDevice) params() map[string]string {
	p := map[string]string{"gpu_name": d.name, "compute_capability": fmt.Sprintf("%d.%d", d.major, d.minor)}
	if !d.peakKnown {
		p["peak_note"] = "GPU SKU " + d.name + " not in the catalog: no peak"
	} else {
		p["peak_source"] = d.peak.Source
	}
	return p
}

// gpuRun holds what the GPU benchmarks share.
type gpuRun struct {
	ctx  context.Context
	cfg  config
	rt   *cudart
	devs []gpuDevice
	sel  map[string]bool
}

// gpuResults loads the CUDA libraries and runs the selected GPU benchmarks.
// Anything that cannot be loaded or run gives not-run results with the
// reason; nothing here needs CUDA at build time.
func gpuResults(ctx context.Context, cfg config, libs CUDALibraries, sel map[string]bool) []Result {
	// CUDA's current device (cudaSetDevice) belongs to the host thread:
	// every call of the run stays on this one, or a goroutine moved to
	// another thread would allocate and copy on that thread's device.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	libs = libs.withDefaults()
	var want []string
	for _, n := range gpuNames() {
		if sel[n] {
			want = append(want, n)
		}
	}
	allNotRun := func(reason string) []Result {
		out := make([]Result, len(want))
		for i, n := range want {
			out[i] = notRun(n, "gpu", reason)
		}
		return out
	}
	rt, count, err := openCudart(libs.Cudart)
	if err != nil {
		return allNotRun(err.Error())
	}
	if count < 1 {
		return allNotRun("no CUDA devices")
	}
	g := &gpuRun{ctx: ctx, cfg: cfg, rt: rt, sel: sel}
	for i := range count {
		d := gpuDevice{index: i}
		if d.name, err = rt.deviceName(i); err != nil {
			return allNotRun(err.Error())
		}
		if d.major, d.minor, err = rt.computeCapability(i); err != nil {
			return allNotRun(err.Error())
		}
		d.peak, d.peakKnown = gpuPeakFor(d.name)
		g.devs = append(g.devs, d)
	}

	var out []Result
	needLt := sel["gpu_gemm_bf16"] || sel["gpu_gemm_fp16"] || sel["gpu_gemm_fp8"] || anySelected(sel, "gpu_mlp_")
	var lt *cublasLt
	var ltErr error
	if needLt {
		lt, ltErr = loadCublasLt(libs.CublasLt)
	}
	for _, d := range g.devs {
		for _, prec := range []string{"bf16", "fp16", "fp8"} {
			name := "gpu_gemm_" + prec
			if !sel[name] {
				continue
			}
			if ltErr != nil {
				out = append(out, notRun(name, d.label(), ltErr.Error()))
				continue
			}
			out = append(out, guarded([]string{name}, d.label(), func() []Result { return []Result{g.gemm(lt, d, prec)} })...)
		}
		if copies := selected(sel, "gpu_hbm_d2d", "gpu_h2d", "gpu_d2h"); len(copies) > 0 {
			out = append(out, guarded(copies, d.label(), func() []Result { return g.copies(d) })...)
		}
	}
	if sel["gpu_nvlink_p2p"] {
		out = append(out, guarded([]string{"gpu_nvlink_p2p"}, "gpu", g.peerCopies)...)
	}
	if sel["gpu_nccl_allreduce_busbw"] {
		out = append(out, guarded([]string{"gpu_nccl_allreduce_busbw"}, "gpu:all", func() []Result { return []Result{g.allReduce(libs.NCCL)} })...)
	}
	if anySelected(sel, "gpu_mlp_") {
		if ltErr != nil {
			for _, n := range gpuMLPNames() {
				out = append(out, notRun(n, "gpu0", ltErr.Error()))
			}
		} else {
			out = append(out, guarded(gpuMLPNames(), g.devs[0].label(), func() []Result { return g.mlp(lt, g.devs[0]) })...)
		}
	}
	return out
}

// selected returns those of names that sel selects, in order.
func selected(sel map[string]bool, names ...string) []string {
	var out []string
	for _, n := range names {
		if sel[n] {
			out = append(out, n)
		}
	}
	return out
}

func anySelected(sel map[string]bool, prefix string) bool {
	for n, ok := range sel {
		if ok && strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// upload copies host bytes into a new device buffer.
func (g *gpuRun) upload(host []byte) (uintptr, error) {
	p, err := g.rt.alloc(uint64(len(host)))
	if err != nil {
		return 0, err
	}
	if err := g.rt.check("cudaMemcpy", g.rt.memcpy(p, uintptr(unsafe.Pointer(&host[0])), uint64(len(host)), cudaMemcpyHostToDevice)); err != nil {
		g.rt.free(p)
		return 0, err
	}
	return p, nil
}

// randomBits returns n elements of the given type, uniform in about [-1, 1],
// as little-endian bytes.
func randomBits(r *rand.Rand, prec string, n int, scale float32) []byte {
	switch prec {
	case "fp8":
		b := make([]byte, n)
		for i := range b {
			// E4M3: exponent field 4..8 (2^-3 .. 2^1), random mantissa and sign.
			b[i] = byte(r.IntN(2))<<7 | byte(4+r.IntN(5))<<3 | byte(r.IntN(8))
		}
		return b
	default:
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			v := (float32(r.Float64())*2 - 1) * scale
			var h uint16
			if prec == "fp16" {
				h = toFP16(v)
			} else {
				h = uint16(toBF16(v))
			}
			b[2*i], b[2*i+1] = byte(h), byte(h>>8)
		}
		return b
	}
}

// toFP16 converts to IEEE half precision, rounding to nearest (ties away),
// flushing values below the normal range to zero; inputs are small here.
func toFP16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int(u>>23&0xff) - 127 + 15
	mant := u & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	if mant&0x1000 != 0 {
		h++ // round; a carry into the exponent is still correct
	}
	return h
}

// gemmType gives the cuBLASLt input and output types of a precision and the
// compute capability its tensor cores need.
func gemmType(prec string) (in, out int32, minCC int) {
	switch prec {
	case "fp16":
		return cudaR16F, cudaR16F, 70
	case "fp8":
		return cudaR8FE4M3, cudaR16BF, 89
	default:
		return cudaR16BF, cudaR16BF, 80
	}
}

// gemm times D = A^T B (n x n x n, "TN", the layout FP8 requires) through
// cublasLtMatmul with fp32 accumulation.
func (g *gpuRun) gemm(lt *cublasLt, d gpuDevice, prec string) Result {
	name := "gpu_gemm_" + prec
	inType, outType, minCC := gemmType(prec)
	if cc := d.major*10 + d.minor; cc < minCC {
		return notRun(name, d.label(), fmt.Sprintf("%s tensor-core GEMM needs compute capability %d.%d, %s has %d.%d", prec, minCC/10, minCC%10, d.name, d.major, d.minor))
	}
	fail := func(err error) Result { return notRun(name, d.label(), err.Error()) }
	rt := g.rt
	if err := rt.check("cudaSetDevice", rt.setDevice(int32(d.index))); err != nil {
		return fail(err)
	}
	n := g.cfg.gpuGemmN
	r := rand.New(rand.NewPCG(uint64(d.index), 9))
	hostA, hostB := randomBits(r, prec, n*n, 1), randomBits(r, prec, n*n, 1)
	a, err := g.upload(hostA)
	if err != nil {
		return fail(err)
	}
	defer rt.free(a)
	b, err := g.upload(hostB)
	if err != nil {
		return fail(err)
	}
	defer rt.free(b)
	dst, err := rt.alloc(uint64(2 * n * n))
	if err != nil {
		return fail(err)
	}
	defer rt.free(dst)
	const wsSize = 32 << 20
	ws, err := rt.alloc(wsSize)
	if err != nil {
		return fail(err)
	}
	defer rt.free(ws)
	var h uintptr
	if err := ltCheck("cublasLtCreate", lt.create(&h)); err != nil {
		return fail(err)
	}
	defer lt.destroy(h)
	p, err := lt.plan(h, matmulShape{m: n, n: n, k: n, transA: true, inType: inType, outType: outType}, ws, wsSize)
	if err != nil {
		return fail(err)
	}
	defer p.close()
	tm, err := rt.newTimer()
	if err != nil {
		return fail(err)
	}
	defer tm.close()
	call := func() error { return p.run(h, a, b, dst, 1, 0) }
	for range 3 {
		if err := call(); err != nil {
			return fail(err)
		}
	}
	verify := func(when string) error {
		if err := rt.check("cudaDeviceSynchronize", rt.deviceSynchronize()); err != nil {
			return err
		}
		if err := g.checkGemmProduct(dst, hostA, hostB, prec, n); err != nil {
			return fmt.Errorf("%s GEMM gave a wrong product %s: %w", prec, when, err)
		}
		return nil
	}
	if err := verify("before timing"); err != nil {
		return fail(err)
	}
	flops := 2 * float64(n) * float64(n) * float64(n)
	var rates []float64
	for range g.cfg.gpuReps {
		if err := g.ctx.Err(); err != nil {
			return fail(err)
		}
		s, err := tm.time(call)
		if err != nil {
			return fail(err)
		}
		rates = append(rates, flops/s/1e12)
	}
	if err := verify("after timing"); err != nil {
		return fail(err)
	}
	peak := map[string]float64{"bf16": d.peak.BF16, "fp16": d.peak.FP16, "fp8": d.peak.FP8}[prec]
	res := measured(name, "cublasLt", "TFLOP/s", rates, peak, mergeParams(d.params(), map[string]string{
		"n": strconv.Itoa(n), "layout": "TN", "accumulate": "fp32",
	}, lt.lib.params()))
	res.Device = d.label()
	return res
}

// copies measures device-to-device (HBM, read plus write counted), and
// pinned host-to-device and device-to-host bandwidth, in GB/s (10^9 bytes).
func (g *gpuRun) copies(d gpuDevice) []Result {
	rt := g.rt
	size := uint64(g.cfg.gpuCopySize)
	type spec struct {
		name   string
		kind   int32
		factor float64
		peak   float64
		note   string
	}
	specs := []spec{
		{"gpu_hbm_d2d", cudaMemcpyDeviceToDevice, 2, d.peak.HBM, "read+write bytes counted"},
		{"gpu_h2d", cudaMemcpyHostToDevice, 1, d.peak.PCIe, "pinned host memory"},
		{"gpu_d2h", cudaMemcpyDeviceToHost, 1, d.peak.PCIe, "pinned host memory"},
	}
	var out []Result
	failAll := func(err error) []Result {
		out = out[:0]
		for _, s := range specs {
			if g.sel[s.name] {
				out = append(out, notRun(s.name, d.label(), err.Error()))
			}
		}
		return out
	}
	if err := rt.check("cudaSetDevice", rt.setDevice(int32(d.index))); err != nil {
		return failAll(err)
	}
	src, err := rt.alloc(size)
	if err != nil {
		return failAll(err)
	}
	defer rt.free(src)
	dst, err := rt.alloc(size)
	if err != nil {
		return failAll(err)
	}
	defer rt.free(dst)
	var host uintptr
	if err := rt.check("cudaMallocHost", rt.mallocHost(&host, size)); err != nil {
		return failAll(err)
	}
	defer rt.freeHost(host)
	if err := rt.check("cudaMemset", rt.memset(src, 1, size)); err != nil {
		return failAll(err)
	}
	tm, err := rt.newTimer()
	if err != nil {
		return failAll(err)
	}
	defer tm.close()
	for _, s := range specs {
		if !g.sel[s.name] {
			continue
		}
		from, to := src, dst
		switch s.kind {
		case cudaMemcpyHostToDevice:
			from = host
		case cudaMemcpyDeviceToHost:
			to = host
		}
		call := func() error { return rt.check("cudaMemcpy", rt.memcpy(to, from, size, s.kind)) }
		var rates []float64
		var runErr error
		for i := -2; i < g.cfg.gpuReps && runErr == nil; i++ {
			if runErr = g.ctx.Err(); runErr != nil {
				break
			}
			var sec float64
			if sec, runErr = tm.time(call); runErr == nil && i >= 0 {
				rates = append(rates, s.factor*float64(size)/sec/1e9)
			}
		}
		if runErr != nil {
			out = append(out, notRun(s.name, d.label(), runErr.Error()))
			continue
		}
		res := measured(s.name, "cudart", "GB/s", rates, s.peak, mergeParams(d.params(), map[string]string{"bytes": strconv.FormatUint(size, 10), "note": s.note}, rt.lib.params()))
		res.Device = d.label()
		out = append(out, res)
	}
	return out
}

// peerCopies measures cudaMemcpyPeer between device pairs: each device to
// the next (a ring) in quick mode, every ordered pair otherwise.
func (g *gpuRun) peerCopies() []Result {
	const name = "gpu_nvlink_p2p"
	if len(g.devs) < 2 {
		return []Result{notRun(name, "gpu", "peer bandwidth needs two or more GPUs")}
	}
	var pairs [][2]int
	for i := range g.devs {
		if g.cfg.quick {
			if j := (i + 1) % len(g.devs); j != i && !(len(g.devs) == 2 && i == 1) {
				pairs = append(pairs, [2]int{i, j})
			}
			continue
		}
		for j := range g.devs {
			if i != j {
				pairs = append(pairs, [2]int{i, j})
			}
		}
	}
	var out []Result
	for _, p := range pairs {
		out = append(out, g.peerCopy(g.devs[p[0]], g.devs[p[1]]))
	}
	return out
}

func (g *gpuRun) peerCopy(a, b gpuDevice) Result {
	const name = "gpu_nvlink_p2p"
	label := a.label() + "->" + b.label()
	rt := g.rt
	fail := func(err error) Result { return notRun(name, label, err.Error()) }
	var can int32
	if err := rt.check("cudaDeviceCanAccessPeer", rt.deviceCanAccessPeer(&can, int32(a.index), int32(b.index))); err != nil {
		return fail(err)
	}
	if can == 0 {
		return fail(fmt.Errorf("%s cannot access %s as a peer", a.label(), b.label()))
	}
	size := uint64(g.cfg.gpuCopySize)
	if err := rt.check("cudaSetDevice", rt.setDevice(int32(b.index))); err != nil {
		return fail(err)
	}
	dst, err := rt.alloc(size)
	if err != nil {
		return fail(err)
	}
	defer rt.free(dst)
	if err := rt.check("cudaSetDevice", rt.setDevice(int32(a.index))); err != nil {
		return fail(err)
	}
	// 704 is cudaErrorPeerAccessAlreadyEnabled.
	if code := rt.deviceEnablePeerAccess(int32(b.index), 0); code != 0 && code != 704 {
		return fail(rt.check("cudaDeviceEnablePeerAccess", code))
	}
	src, err := rt.alloc(size)
	if err != nil {
		return fail(err)
	}
	defer rt.free(src)
	tm, err := rt.newTimer()
	if err != nil {
		return fail(err)
	}
	defer tm.close()
	call := func() error {
		return rt.check("cudaMemcpyPeer", rt.memcpyPeer(dst, int32(b.index), src, int32(a.index), size))
	}
	var rates []float64
	for i := -2; i < g.cfg.gpuReps; i++ {
		if err := g.ctx.Err(); err != nil {
			return fail(err)
		}
		s, err := tm.time(call)
		if err != nil {
			return fail(err)
		}
		if i >= 0 {
			rates = append(rates, float64(size)/s/1e9)
		}
	}
	res := measured(name, "cudart", "GB/s", rates, a.peak.NVLink, mergeParams(a.params(), map[string]string{
		"bytes": strconv.FormatUint(size, 10), "direction": "unidirectional", "peak_basis": "NVLink per direction",
	}, rt.lib.params()))
	res.Device = label
	return res
}

// allReduce measures NCCL all-reduce over every local GPU (fp32 sum) and
// reports the bus bandwidth as nccl-tests defines it: algbw * 2(n-1)/n.
func (g *gpuRun) allReduce(names []string) Result {
	const name = "gpu_nccl_allreduce_busbw"
	n := len(g.devs)
	if n < 2 {
		return notRun(name, "gpu:all", "all-reduce bus bandwidth needs two or more GPUs")
	}
	fail := func(err error) Result { return notRun(name, "gpu:all", err.Error()) }
	nc, err := loadNCCL(names)
	if err != nil {
		return fail(err)
	}
	rt := g.rt
	comms := make([]uintptr, n)
	devlist := make([]int32, n)
	for i := range devlist {
		devlist[i] = int32(i)
	}
	if err := nc.check("ncclCommInitAll", nc.commInitAll(unsafe.Pointer(&comms[0]), int32(n), unsafe.Pointer(&devlist[0]))); err != nil {
		return fail(err)
	}
	defer func() {
		for _, c := range comms {
			nc.commDestroy(c)
		}
	}()
	bytes := uint64(g.cfg.gpuCopySize)
	count := bytes / 4
	send, recv, streams := make([]uintptr, n), make([]uintptr, n), make([]uintptr, n)
	for i := range n {
		if err := rt.check("cudaSetDevice", rt.setDevice(int32(i))); err != nil {
			return fail(err)
		}
		if send[i], err = rt.alloc(bytes); err != nil {
			return fail(err)
		}
		defer rt.free(send[i])
		if recv[i], err = rt.alloc(bytes); err != nil {
			return fail(err)
		}
		defer rt.free(recv[i])
		if err := rt.check("cudaMemset", rt.memset(send[i], int32(allReduceFill(i)), bytes)); err != nil {
			return fail(err)
		}
		if err := rt.check("cudaStreamCreate", rt.streamCreate(&streams[i])); err != nil {
			return fail(err)
		}
	}
	iter := func() error {
		if err := nc.check("ncclGroupStart", nc.groupStart()); err != nil {
			return err
		}
		for i := range n {
			if err := nc.check("ncclAllReduce", nc.allReduce(send[i], recv[i], count, ncclFloat32, ncclSum, comms[i], streams[i])); err != nil {
				nc.groupEnd()
				return err
			}
		}
		if err := nc.check("ncclGroupEnd", nc.groupEnd()); err != nil {
			return err
		}
		for i := range n {
			if err := rt.check("cudaStreamSynchronize", rt.streamSynchronize(streams[i])); err != nil {
				return err
			}
		}
		return nil
	}
	var rates []float64
	for i := -2; i < g.cfg.gpuReps; i++ {
		if err := g.ctx.Err(); err != nil {
			return fail(err)
		}
		t0 := time.Now()
		if err := iter(); err != nil {
			return fail(err)
		}
		if i >= 0 {
			algbw := float64(bytes) / time.Since(t0).Seconds() / 1e9
			rates = append(rates, algbw*2*float64(n-1)/float64(n))
		}
	}
	if err := g.checkAllReduce(recv, bytes); err != nil {
		return fail(fmt.Errorf("all-reduce gave a wrong sum: %w", err))
	}
	d := g.devs[0]
	res := measured(name, "nccl", "GB/s", rates, d.peak.NVLink, mergeParams(d.params(), map[string]string{
		"gpus": strconv.Itoa(n), "bytes": strconv.FormatUint(bytes, 10), "dtype": "float32", "op": "sum",
		"definition": "busbw = algbw*2(n-1)/n", "peak_basis": "NVLink per direction",
	}, nc.lib.params()))
	res.Device = "gpu:all"
	return res
}
