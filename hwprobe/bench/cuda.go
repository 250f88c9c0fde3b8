package bench

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// CUDALibraries names the CUDA libraries loaded at run time; each list is
// tried in order. Zero fields take DefaultCUDALibraries.
type CUDALibraries struct {
	Cudart, CublasLt, NCCL []string
}

// DefaultCUDALibraries are the sonames of CUDA 13 to 11 and NCCL 2, newest
// first, the unversioned development link last: a program linked against
// CUDA asks the loader for the soname, so LD_LIBRARY_PATH picks the same
// copy for hwprobe as for it. The unversioned link exists only where a
// toolkit's development files are installed and need not be the copy the
// soname finds; asked first, it chose the library wherever it existed. A
// CUDA runtime newer than the driver is passed over for the next one (see
// openCudart). Each result names the file loaded and its version.
func DefaultCUDALibraries() CUDALibraries {
	return CUDALibraries{
		Cudart:   []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"},
		CublasLt: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"},
		NCCL:     []string{"libnccl.so.2", "libnccl.so"},
	}
}

// cudaErrorInsufficientDriver: the CUDA runtime is newer than the driver.
const cudaErrorInsufficientDriver = 35

// libInfo is where a library loaded at run time came from, for a result's
// params: the name it was asked by, the file the loader mapped (when the
// platform says) and the version the library reports (when it does).
type libInfo struct{ name, path, version string }

func (l libInfo) params() map[string]string {
	p := map[string]string{"library": l.name}
	if l.path != "" {
		p["library_path"] = l.path
	}
	if l.version != "" {
		p["library_version"] = l.version
	}
	return p
}

// newLibInfo reads the path of the object that defines sym in h.
func newLibInfo(h uintptr, name, sym string) libInfo {
	return libInfo{name: name, path: mappedPath(symbolAddr(h, sym))}
}

// cudaVersion formats a CUDA runtime version (1000*major + 10*minor).
func cudaVersion(v int32) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// cublasVersion formats cublasLtGetVersion (10000*major + 100*minor + patch).
func cublasVersion(v uint64) string { return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100) }

// ncclVersion formats ncclGetVersion: 10000*major + 100*minor + patch since
// NCCL 2.9, 1000*major + 100*minor + patch before.
func ncclVersion(v int32) string {
	if v >= 10000 {
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
}

func (l CUDALibraries) withDefaults() CUDALibraries {
	d := DefaultCUDALibraries()
	if len(l.Cudart) == 0 {
		l.Cudart = d.Cudart
	}
	if len(l.CublasLt) == 0 {
		l.CublasLt = d.CublasLt
	}
	if len(l.NCCL) == 0 {
		l.NCCL = d.NCCL
	}
	return l
}

// CUDA runtime constants (driver_types.h, library_types.h, cublasLt.h, nccl.h).
const (
	cudaMemcpyHostToDevice   = 1
	cudaMemcpyDeviceToHost   = 2
	cudaMemcpyDeviceToDevice = 3

	cudaDevAttrComputeCapabilityMajor = 75
	cudaDevAttrComputeCapabilityMinor = 76

	cudaR32F     = 0
	cudaR16F     = 2
	cudaR16BF    = 14
	cudaR8FE4M3  = 28
	cublasOpN    = 0
	cublasOpT    = 1
	cublasComp32 = 68 // CUBLAS_COMPUTE_32F

	cublasLtDescTransA   = 3
	cublasLtDescTransB   = 4
	cublasLtDescEpilogue = 7
	cublasLtEpilogueRelu = 2
	cublasLtPrefMaxWS    = 1

	ncclFloat32 = 7
	ncclSum     = 0
)

// cudart is libcudart bound at run time. Every function returns a
// cudaError_t; 0 is success.
type cudart struct {
	lib                    libInfo
	getDeviceCount         func(*int32) int32
	setDevice              func(int32) int32
	getDeviceProperties    func(unsafe.Pointer, int32) int32
	deviceGetAttribute     func(*int32, int32, int32) int32
	memGetInfo             func(*uint64, *uint64) int32
	malloc                 func(*uintptr, uint64) int32
	free                   func(uintptr) int32
	mallocHost             func(*uintptr, uint64) int32
	freeHost               func(uintptr) int32
	memcpy                 func(uintptr, uintptr, uint64, int32) int32
	memcpyPeer             func(uintptr, int32, uintptr, int32, uint64) int32
	memset                 func(uintptr, int32, uint64) int32
	deviceSynchronize      func() int32
	deviceCanAccessPeer    func(*int32, int32, int32) int32
	deviceEnablePeerAccess func(int32, uint32) int32
	streamCreate           func(*uintptr) int32
	streamSynchronize      func(uintptr) int32
	eventCreate            func(*uintptr) int32
	eventRecord            func(uintptr, uintptr) int32
	eventSynchronize       func(uintptr) int32
	eventElapsedTime       func(*float32, uintptr, uintptr) int32
	eventDestroy           func(uintptr) int32
	getErrorString         func(int32) string
}

// openCudart loads the first CUDA runtime of names that loads and that the
// driver can run, and returns it with the device count. One that loads but
// is newer than the driver (cudaErrorInsufficientDriver) is closed and the
// next name tried; a library that loads but lacks a symbol, or any other
// error, is final.
func openCudart(names []string) (*cudart, int, error) {
	var loadErr error
	var tooNew []string
	for _, n := range names {
		h, lib, err := dlopenFirst([]string{n})
		if err != nil {
			if loadErr == nil {
				loadErr = err
				if u := errors.Unwrap(err); u != nil {
					loadErr = u // the loader's own words
				}
			}
			continue
		}
		c, err := bindCudart(h, lib)
		if err != nil {
			return nil, 0, fmt.Errorf("loading CUDA runtime: %w", err)
		}
		var count int32
		code := c.getDeviceCount(&count)
		if code == cudaErrorInsufficientDriver {
			tooNew = append(tooNew, strings.TrimSpace(lib+" "+c.lib.version))
			dlclose(h)
			continue
		}
		if err := c.check("cudaGetDeviceCount", code); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", lib, err)
		}
		return c, int(count), nil
	}
	switch {
	case len(tooNew) > 0:
		return nil, 0, fmt.Errorf("loading CUDA runtime: the driver is older than every CUDA runtime found (%s)", strings.Join(tooNew, ", "))
	case loadErr == nil:
		return nil, 0, errors.New("loading CUDA runtime: no library names given")
	}
	return nil, 0, fmt.Errorf("loading CUDA runtime: none of %s could be loaded (%w)", strings.Join(names, ", "), loadErr)
}

// bindCudart binds the CUDA runtime opened as lib.
func bindCudart(h uintptr, lib string) (*cudart, error) {
	c := &cudart{lib: newLibInfo(h, lib, "cudaMalloc")}
	if hasSymbol(h, "cudaRuntimeGetVersion") {
		var getVersion func(*int32) int32
		if err := bindSymbols(h, lib, map[string]any{"cudaRuntimeGetVersion": &getVersion}); err == nil {
			if v := int32(0); getVersion(&v) == 0 && v > 0 {
				c.lib.version = cudaVersion(v)
			}
		}
	}
	// CUDA 12 renamed cudaGetDeviceProperties to a _v2 symbol.
	props := "cudaGetDeviceProperties_v2"
	if !hasSymbol(h, props) {
		props = "cudaGetDeviceProperties"
	}
	err := bindSymbols(h, lib, map[string]any{
		"cudaGetDeviceCount":         &c.getDeviceCount,
		"cudaSetDevice":              &c.setDevice,
		props:                        &c.getDeviceProperties,
		"cudaDeviceGetAttribute":     &c.deviceGetAttribute,
		"cudaMemGetInfo":             &c.memGetInfo,
		"cudaMalloc":                 &c.malloc,
		"cudaFree":                   &c.free,
		"cudaMallocHost":             &c.mallocHost,
		"cudaFreeHost":               &c.freeHost,
		"cudaMemcpy":                 &c.memcpy,
		"cudaMemcpyPeer":             &c.memcpyPeer,
		"cudaMemset":                 &c.memset,
		"cudaDeviceSynchronize":      &c.deviceSynchronize,
		"cudaDeviceCanAccessPeer":    &c.deviceCanAccessPeer,
		"cudaDeviceEnablePeerAccess": &c.deviceEnablePeerAccess,
		"cudaStreamCreate":           &c.streamCreate,
		"cudaStreamSynchronize":      &c.streamSynchronize,
		"cudaEventCreate":            &c.eventCreate,
		"cudaEventRecord":            &c.eventRecord,
		"cudaEventSynchronize":       &c.eventSynchronize,
		"cudaEventElapsedTime":       &c.eventElapsedTime,
		"cudaEventDestroy":           &c.eventDestroy,
		"cudaGetErrorString":         &c.getErrorString,
	})
	if err != nil {
		dlclose(h)
		return nil, err
	}
	return c, nil
}

// check turns a cudaError_t into an error naming the call.
func (c *cudart) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: cuda error %d (%s)", call, code, c.getErrorString(code))
}

// deviceName reads the name, the first field of cudaDeviceProp.
func (c *cudart) deviceName(dev int) (string, error) {
	buf := make([]byte, 8192) // larger than cudaDeviceProp in any CUDA version
	if err := c.check("cudaGetDeviceProperties", c.getDeviceProperties(unsafe.Pointer(&buf[0]), int32(dev))); err != nil {
		return "", err
	}
	n := 0
	for n < 256 && buf[n] != 0 {
		n++
	}
	return string(buf[:n]), nil
}

func (c *cudart) computeCapability(dev int) (int, int, error) {
	var major, minor int32
	if err := c.check("cudaDeviceGetAttribute", c.deviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, int32(dev))); err != nil {
		return 0, 0, err
	}
	if err := c.check("cudaDeviceGetAttribute", c.deviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, int32(dev))); err != nil {
		return 0, 0, err
	}
	return int(major), int(minor), nil
}

func (c *cudart) alloc(n uint64) (uintptr, error) {
	var p uintptr
	return p, c.check("cudaMalloc", c.malloc(&p, n))
}

// timer measures device time between two events on the default stream.
type timer struct {
	c           *cudart
	start, stop uintptr
}

func (c *cudart) newTimer() (*timer, error) {
	t := &timer{c: c}
	if err := c.check("cudaEventCreate", c.eventCreate(&t.start)); err != nil {
		return nil, err
	}
	if err := c.check("cudaEventCreate", c.eventCreate(&t.stop)); err != nil {
		return nil, err
	}
	return t, nil
}

// time runs f between two events and returns the elapsed device seconds.
func (t *timer) time(f func() error) (float64, error) {
	if err := t.c.check("cudaEventRecord", t.c.eventRecord(t.start, 0)); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := t.c.check("cudaEventRecord", t.c.eventRecord(t.stop, 0)); err != nil {
		return 0, err
	}
	if err := t.c.check("cudaEventSynchronize", t.c.eventSynchronize(t.stop)); err != nil {
		return 0, err
	}
	var ms float32
	if err := t.c.check("cudaEventElapsedTime", t.c.eventElapsedTime(&ms, t.start, t.stop)); err != nil {
		return 0, err
	}
	if ms <= 0 {
		return 0, errors.New("cudaEventElapsedTime: non-positive time")
	}
	return float64(ms) / 1e3, nil
}

func (t *timer) close() {
	t.c.eventDestroy(t.start)
	t.c.eventDestroy(t.stop)
}

// cublasLt is libcublasLt bound at run time; every function returns a
// cublasStatus_t, 0 on success. cublasLtMatmul takes 16 arguments, more than
// purego binds, and is called through callC.
type cublasLt struct {
	lib              libInfo
	create           func(*uintptr) int32
	destroy          func(uintptr) int32
	descCreate       func(*uintptr, int32, int32) int32
	descDestroy      func(uintptr) int32
	descSetAttribute func(uintptr, int32, unsafe.Pointer, uint64) int32
	layoutCreate     func(*uintptr, int32, uint64, uint64, int64) int32
	layoutDestroy    func(uintptr) int32
	prefCreate       func(*uintptr) int32
	prefDestroy      func(uintptr) int32
	prefSetAttribute func(uintptr, int32, unsafe.Pointer, uint64) int32
	algoGetHeuristic func(uintptr, uintptr, uintptr, uintptr, uintptr, uintptr, uintptr, int32, unsafe.Pointer, *int32) int32
	matmul           uintptr
}

func loadCublasLt(names []string) (*cublasLt, error) {
	if !canCall16 {
		return nil, fmt.Errorf("cublasLtMatmul needs a 16-argument call, not implemented on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	h, lib, err := dlopenFirst(names)
	if err != nil {
		return nil, fmt.Errorf("loading cuBLASLt: %w", err)
	}
	l := &cublasLt{lib: newLibInfo(h, lib, "cublasLtCreate")}
	if hasSymbol(h, "cublasLtGetVersion") {
		var getVersion func() uint64
		if err := bindSymbols(h, lib, map[string]any{"cublasLtGetVersion": &getVersion}); err == nil {
			if v := getVersion(); v > 0 {
				l.lib.version = cublasVersion(v)
			}
		}
	}
	err = bindSymbols(h, lib, map[string]any{
		"cublasLtCreate":                       &l.create,
		"cublasLtDestroy":                      &l.destroy,
		"cublasLtMatmulDescCreate":             &l.descCreate,
		"cublasLtMatmulDescDestroy":            &l.descDestroy,
		"cublasLtMatmulDescSetAttribute":       &l.descSetAttribute,
		"cublasLtMatrixLayoutCreate":           &l.layoutCreate,
		"cublasLtMatrixLayoutDestroy":          &l.layoutDestroy,
		"cublasLtMatmulPreferenceCreate":       &l.prefCreate,
		"cublasLtMatmulPreferenceDestroy":      &l.prefDestroy,
		"cublasLtMatmulPreferenceSetAttribute": &l.prefSetAttribute,
		"cublasLtMatmulAlgoGetHeuristic":       &l.algoGetHeuristic,
	})
	if err != nil {
		dlclose(h)
		return nil, err
	}
	// cublasLtMatmul is called through callC: only its address is needed.
	if l.matmul = symbolAddr(h, "cublasLtMatmul"); l.matmul == 0 {
		dlclose(h)
		return nil, fmt.Errorf("resolving cublasLtMatmul in %s: symbol not found", lib)
	}
	return l, nil
}

func ltCheck(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: cublas status %d", call, code)
}

// heuristicResult mirrors cublasLtMatmulHeuristicResult_t.
type heuristicResult struct {
	algo      [8]uint64
	workspace uint64
	state     int32
	waves     float32
	reserved  [4]int32
}

// ltPlan is one prepared matmul D = alpha*op(A)*op(B) + beta*C in
// column-major layout, with C and D the same matrix.
type ltPlan struct {
	l             *cublasLt
	desc, a, b, c uintptr
	algo          heuristicResult
	workspace     uintptr
	wsSize        uint64
}

// matmulShape describes a plan: op(A) is m x k, op(B) is k x n.
type matmulShape struct {
	m, n, k         int
	transA, transB  bool
	inType, outType int32
	relu            bool
}

func (l *cublasLt) plan(handle uintptr, s matmulShape, workspace uintptr, wsSize uint64) (*ltPlan, error) {
	p := &ltPlan{l: l, workspace: workspace, wsSize: wsSize}
	if err := ltCheck("cublasLtMatmulDescCreate", l.descCreate(&p.desc, cublasComp32, cudaR32F)); err != nil {
		return nil, err
	}
	opA, opB := int32(cublasOpN), int32(cublasOpN)
	ar, ac, br, bc := s.m, s.k, s.k, s.n
	if s.transA {
		opA, ar, ac = cublasOpT, s.k, s.m
	}
	if s.transB {
		opB, br, bc = cublasOpT, s.n, s.k
	}
	if err := ltCheck("cublasLtMatmulDescSetAttribute", l.descSetAttribute(p.desc, cublasLtDescTransA, unsafe.Pointer(&opA), 4)); err != nil {
		return nil, err
	}
	if err := ltCheck("cublasLtMatmulDescSetAttribute", l.descSetAttribute(p.desc, cublasLtDescTransB, unsafe.Pointer(&opB), 4)); err != nil {
		return nil, err
	}
	if s.relu {
		epi := uint32(cublasLtEpilogueRelu)
		if err := ltCheck("cublasLtMatmulDescSetAttribute", l.descSetAttribute(p.desc, cublasLtDescEpilogue, unsafe.Pointer(&epi), 4)); err != nil {
			return nil, err
		}
	}
	if err := ltCheck("cublasLtMatrixLayoutCreate", l.layoutCreate(&p.a, s.inType, uint64(ar), uint64(ac), int64(ar))); err != nil {
		return nil, err
	}
	if err := ltCheck("cublasLtMatrixLayoutCreate", l.layoutCreate(&p.b, s.inType, uint64(br), uint64(bc), int64(br))); err != nil {
		return nil, err
	}
	if err := ltCheck("cublasLtMatrixLayoutCreate", l.layoutCreate(&p.c, s.outType, uint64(s.m), uint64(s.n), int64(s.m))); err != nil {
		return nil, err
	}
	var pref uintptr
	if err := ltCheck("cublasLtMatmulPreferenceCreate", l.prefCreate(&pref)); err != nil {
		return nil, err
	}
	defer l.prefDestroy(pref)
	ws := wsSize
	if err := ltCheck("cublasLtMatmulPreferenceSetAttribute", l.prefSetAttribute(pref, cublasLtPrefMaxWS, unsafe.Pointer(&ws), 8)); err != nil {
		return nil, err
	}
	var n int32
	if err := ltCheck("cublasLtMatmulAlgoGetHeuristic", l.algoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, unsafe.Pointer(&p.algo), &n)); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errors.New("cublasLtMatmulAlgoGetHeuristic: no algorithm for this shape and type")
	}
	return p, nil
}

// run computes D = alpha*op(A)*op(B) + beta*D on the default stream.
func (p *ltPlan) run(handle, a, b, d uintptr, alpha, beta float32) error {
	al, be := new(float32), new(float32)
	*al, *be = alpha, beta
	st := callC(p.l.matmul, handle, p.desc, uintptr(unsafe.Pointer(al)), a, p.a, b, p.b,
		uintptr(unsafe.Pointer(be)), d, p.c, d, p.c, uintptr(unsafe.Pointer(&p.algo.algo)), p.workspace, uintptr(p.wsSize), 0)
	runtime.KeepAlive(al)
	runtime.KeepAlive(be)
	runtime.KeepAlive(p)
	return ltCheck("cublasLtMatmul", int32(st))
}

func (p *ltPlan) close() {
	p.l.layoutDestroy(p.a)
	p.l.layoutDestroy(p.b)
	p.l.layoutDestroy(p.c)
	p.l.descDestroy(p.desc)
}

// nccl is libnccl bound at run time; 0 is ncclSuccess.
type nccl struct {
	lib            libInfo
	commInitAll    func(unsafe.Pointer, int32, unsafe.Pointer) int32
	commDestroy    func(uintptr) int32
	allReduce      func(uintptr, uintptr, uint64, int32, int32, uintptr, uintptr) int32
	groupStart     func() int32
	groupEnd       func() int32
	getErrorString func(int32) string
}

func loadNCCL(names []string) (*nccl, error) {
	h, lib, err := dlopenFirst(names)
	if err != nil {
		return nil, fmt.Errorf("loading NCCL: %w", err)
	}
	n := &nccl{lib: newLibInfo(h, lib, "ncclAllReduce")}
	if hasSymbol(h, "ncclGetVersion") {
		var getVersion func(*int32) int32
		if err := bindSymbols(h, lib, map[string]any{"ncclGetVersion": &getVersion}); err == nil {
			if v := int32(0); getVersion(&v) == 0 && v > 0 {
				n.lib.version = ncclVersion(v)
			}
		}
	}
	err = bindSymbols(h, lib, map[string]any{
		"ncclCommInitAll":    &n.commInitAll,
		"ncclCommDestroy":    &n.commDestroy,
		"ncclAllReduce":      &n.allReduce,
		"ncclGroupStart":     &n.groupStart,
		"ncclGroupEnd":       &n.groupEnd,
		"ncclGetErrorString": &n.getErrorString,
	})
	if err != nil {
		dlclose(h)
		return nil, err
	}
	return n, nil
}

func (n *nccl) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: nccl error %d (%s)", call, code, n.getErrorString(code))
}
