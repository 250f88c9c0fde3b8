package bench

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// cpuPeak is the theoretical fp32 peak of the cores a benchmark uses:
// cores x clock x FMA units x (vector bits / 32) x 2; and the bf16 and
// int8 peaks of the instructions hwprobe's kernels use.
type cpuPeak struct {
	Cores        int
	ClockGHz     float64
	ClockSource  string // "catalog" (sustained all-core clock) or "estimated" (timed: see cpuPeakFor)
	FMAUnits     int
	VectorBits   int
	BF16PerCycle int    // bf16 FLOPs per cycle per core; 0 means the fp32 rate
	BF16Basis    string // what BF16PerCycle rests on
	Int8PerCycle int    // int8 operations (multiplies and adds) per cycle per core; 0 without an int8 kernel
	Int8Basis    string // what Int8PerCycle rests on
	// AMXBF16PerCycle and AMXInt8PerCycle are the tile units' rates, per
	// cycle per core, where CPUID reports AMX-BF16 and AMX-INT8 (0
	// otherwise): the peaks of the AMX kernels, used when they run.
	AMXBF16PerCycle, AMXInt8PerCycle int
	AMXBasis                         string
	Source                           string // the catalog row, or why the peak is estimated
	Note                             string
}

// GFLOPS32 is the fp32 peak in GFLOP/s.
func (p cpuPeak) GFLOPS32() float64 {
	return float64(p.Cores) * p.ClockGHz * float64(p.FMAUnits) * float64(p.VectorBits/32) * 2
}

// GFLOPSBF16 is the bf16 peak in GFLOP/s (fp32 accumulation).
func (p cpuPeak) GFLOPSBF16() float64 {
	if p.BF16PerCycle <= 0 {
		return p.GFLOPS32()
	}
	return float64(p.Cores) * p.ClockGHz * float64(p.BF16PerCycle)
}

// GFLOPSBF16AMX is the AMX-BF16 peak in GFLOP/s (0 without AMX-BF16).
func (p cpuPeak) GFLOPSBF16AMX() float64 {
	return float64(p.Cores) * p.ClockGHz * float64(p.AMXBF16PerCycle)
}

// GOPSInt8AMX is the AMX-INT8 peak in GOP/s (0 without AMX-INT8).
func (p cpuPeak) GOPSInt8AMX() float64 {
	return float64(p.Cores) * p.ClockGHz * float64(p.AMXInt8PerCycle)
}

// GOPSInt8 is the int8 peak in GOP/s (int32 accumulation).
func (p cpuPeak) GOPSInt8() float64 {
	return float64(p.Cores) * p.ClockGHz * float64(p.Int8PerCycle)
}

// params describes the peak for a Result.
func (p cpuPeak) params() map[string]string {
	m := map[string]string{
		"peak_cores":        strconv.Itoa(p.Cores),
		"peak_clock_ghz":    strconv.FormatFloat(p.ClockGHz, 'f', 2, 64),
		"peak_clock_source": p.ClockSource,
		"peak_fma_units":    strconv.Itoa(p.FMAUnits),
		"peak_vector_bits":  strconv.Itoa(p.VectorBits),
		"peak_source":       p.Source,
	}
	if p.ClockSource != "catalog" {
		m["peak_estimated"] = "true"
	}
	if p.Note != "" {
		m["peak_note"] = p.Note
	}
	return m
}

// fmaShape is the number of FMA pipes and their effective width for a CPU
// the catalog does not know, from its vendor, family and ISA.
func fmaShape(vendor cpuid.Vendor, family int, avx512, avx2, sve bool) (units, bits int, note string) {
	switch {
	case vendor == cpuid.AMD && avx512 && family >= 0x1a:
		return 2, 512, "" // Zen 5: two full-width 512-bit FMA pipes
	case vendor == cpuid.AMD && avx512:
		return 2, 256, "AVX-512 executed on 256-bit pipes" // Zen 4
	case avx512:
		return 2, 512, "assumes two 512-bit FMA units (some Xeon SKUs have one)"
	case avx2:
		return 2, 256, ""
	case sve:
		return 2, 256, "assumes two 256-bit SVE pipes"
	default:
		return 2, 128, "assumes two 128-bit SIMD FMA pipes"
	}
}

// hostCPU is what the peak is computed from, read once from CPUID.
type hostCPU struct {
	ModelName     string // the brand string, as /proc/cpuinfo "model name"
	Vendor        cpuid.Vendor
	Family, Model int
	Cores         int // physical cores usable
	AVX512, AVX2  bool
	SVE           bool
	AVX512BF16    bool
	AVX512VNNI    bool
	AMXBF16       bool
	AMXInt8       bool
}

func currentCPU() hostCPU {
	c := cpuid.CPU
	// Hypervisors report odd core counts through CPUID: trust the online
	// CPUs divided by the SMT width.
	cores := runtime.NumCPU() / max(1, c.ThreadsPerCore)
	if c.PhysicalCores > 0 {
		cores = min(cores, c.PhysicalCores)
	}
	return hostCPU{
		ModelName: c.BrandName, Vendor: c.VendorID, Family: c.Family, Model: c.Model, Cores: max(1, cores),
		AVX512: c.Supports(cpuid.AVX512F), AVX2: c.Supports(cpuid.AVX2, cpuid.FMA3), SVE: c.Supports(cpuid.SVE),
		AVX512BF16: c.Supports(cpuid.AVX512BF16), AVX512VNNI: c.Supports(cpuid.AVX512F, cpuid.AVX512VNNI),
		AMXBF16: c.Supports(cpuid.AMXBF16, cpuid.AMXTILE), AMXInt8: c.Supports(cpuid.AMXINT8, cpuid.AMXTILE),
	}
}

// detectCPUPeak computes the peak for the given number of threads.
func detectCPUPeak(threads int) cpuPeak {
	return cpuPeakFor(currentCPU(), threads, clockTimers{vector: vectorFMARate, chain: estimateClockGHz})
}

// clockTimers time the clock of a CPU the catalog does not know.
type clockTimers struct {
	// vector is the fp32 GFLOP/s one core sustains in independent FMAs of
	// the widest vector width the host runs (bits), timed on cores cores at
	// once; ok is false where no such loop runs here.
	vector func(cores int) (gflopsPerCore float64, bits int, ok bool)
	// chain is the clock timed from a dependent scalar FMA chain whose
	// FMAs take fmaLatency cycles each.
	chain func(fmaLatency int) float64
}

// cpuPeakFor is the peak of threads cores of h. The catalog (matched
// exactly by model name) gives the sustained all-core clock and the pipe
// shape. A CPU it does not know gets its pipe shape from its ISA and an
// estimated clock, and says so: the rate of independent vector FMAs of the
// widest width, run on all the peak's cores at once, over that shape (the
// clock the FMA pipes hold under the load a GEMM puts on them); where no
// vector loop runs, the clock of a dependent scalar FMA chain with its
// generation's FMA latency. The turbo clock in cpufreq's cpuinfo_max_freq
// is never used: no core sustains it under a vector load on all cores.
func cpuPeakFor(h hostCPU, threads int, clk clockTimers) cpuPeak {
	cores := h.Cores
	if threads > 0 {
		cores = min(cores, threads)
	}
	p := cpuPeak{Cores: max(1, cores)}
	if c, ok := catalog.CPUCoreByModelName(h.ModelName); ok {
		p.ClockGHz, p.ClockSource = c.SustainedClockGHz, "catalog"
		p.FMAUnits, p.VectorBits = c.FMAUnits, c.VectorBits
		p.Source = "catalog: " + c.ModelName + " (" + c.Microarchitecture + "): " + c.Source
	} else {
		var note string
		p.FMAUnits, p.VectorBits, note = fmaShape(h.Vendor, h.Family, h.AVX512, h.AVX2, h.SVE)
		p.Note, p.ClockSource = note, "estimated"
		perCycle := float64(p.FMAUnits * p.VectorBits / 32 * 2)
		if g, bits, ok := clk.vector(p.Cores); ok && g > 0 {
			p.ClockGHz = g / perCycle
			p.Source = fmt.Sprintf("estimated: %q is not in the catalog; clock from the rate of independent %d-bit FMAs on %d cores at once, %.1f GFLOP/s per core over %d FMA pipes x %d bits",
				h.ModelName, bits, p.Cores, g, p.FMAUnits, p.VectorBits)
		} else {
			lat, known := catalog.FMALatencyCycles(vendorName(h.Vendor), h.Family, h.Model)
			p.ClockGHz = clk.chain(lat)
			p.Source = fmt.Sprintf("estimated: %q is not in the catalog; clock timed from a dependent FMA chain at %d cycles per FMA", h.ModelName, lat)
			if !known {
				p.Source += " (latency assumed: generation unknown)"
			}
		}
	}
	// The bf16 and int8 peaks are those of the vector instructions the
	// AVX-512 kernels run (AVX512_BF16, AVX512-VNNI); the AMX peaks those
	// of the tile units, which the AMX kernels are judged against when
	// they run. A result says which kernel ran and which peak it used.
	fp32 := p.FMAUnits * p.VectorBits / 32 * 2
	switch {
	case h.AVX512BF16:
		p.BF16PerCycle, p.BF16Basis = 2*fp32, "AVX512_BF16 dot products: twice the fp32 FMA rate"
	default:
		p.BF16PerCycle, p.BF16Basis = fp32, "no bf16 instructions: bf16 computed at the fp32 rate"
	}
	if h.AVX512VNNI {
		// VPDPBUSD zmm: 64 u8 x s8 products and their 64 additions into
		// 16 int32 sums, 128 operations, where VFMADD231PS zmm does 32
		// FLOPs, at the same rate on the same pipes (Intel Ice Lake and
		// Sapphire Rapids: ports 0 and 5; AMD Zen 4 and 5: the FMA pipes):
		// four times the fp32 rate, twice the bf16 (VDPBF16PS) rate.
		p.Int8PerCycle = 4 * fp32
		p.Int8Basis = fmt.Sprintf("AVX512-VNNI VPDPBUSD: 128 int8 ops per 512-bit instruction at the FMA pipes' rate, 4x the fp32 FMA rate (%d ops/cycle/core)", 4*fp32)
	} else if h.AVX2 {
		// Without VNNI: VPMADDUBSW ymm makes 32 u8 x s8 products and
		// sums them in pairs into int16, VPMADDWD against ones widens
		// and sums those pairs into 8 int32 (VPADDD accumulates): 64
		// operations for two multiplies, on the two vector multiply
		// pipes (Intel since Skylake: ports 0 and 1; AMD Zen 2 to 4:
		// FP0 and FP3): 64 ops a cycle at 256 bits, twice the fp32 FMA
		// rate of two 256-bit FMA pipes.
		p.Int8PerCycle = 2 * fp32
		p.Int8Basis = fmt.Sprintf("AVX2 VPMADDUBSW and VPMADDWD: 64 int8 ops per two 256-bit multiplies on two multiply pipes, 2x the fp32 FMA rate (%d ops/cycle/core)", 2*fp32)
	}
	// AMX (Sapphire Rapids and later): one tile product of 16 x 16 x 32
	// bf16 (16 x 16 x 64 int8) every 16 cycles per core, 1024 bf16 FLOPs
	// or 2048 int8 ops a cycle, at the clock above (the tile unit's clock
	// under load is not timed apart from the FMA pipes').
	if h.AMXBF16 {
		p.AMXBF16PerCycle = 1024
	}
	if h.AMXInt8 {
		p.AMXInt8PerCycle = 2048
	}
	if h.AMXBF16 || h.AMXInt8 {
		p.AMXBasis = "AMX tile products (TDPBF16PS, TDPBUSD): 1024 bf16 FLOPs and 2048 int8 ops per cycle per core, at the clock above"
	}
	return p
}

func vendorName(v cpuid.Vendor) string {
	switch v {
	case cpuid.AMD:
		return "AMD"
	case cpuid.Intel:
		return "Intel"
	case cpuid.ARM, cpuid.Ampere:
		return "ARM"
	}
	return v.String()
}

// estimateClockGHz times a chain of dependent FMAs and returns the best of
// many short runs: the clock a busy core reaches. Short runs make it likely
// that at least one is not interrupted on a shared host.
func estimateClockGHz(fmaLatencyCycles int) float64 {
	const n = 400_000
	best := 0.0
	for range 40 {
		x := 1.0
		t0 := time.Now()
		for range n / 8 {
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
			x = math.FMA(x, 0.999999, 1e-9)
		}
		el := time.Since(t0).Seconds()
		if x == 0 || el <= 0 { // keeps x live
			continue
		}
		best = max(best, n*float64(fmaLatencyCycles)/el/1e9)
	}
	return best
}

// vectorFMARate runs fmaLoop on cores goroutines at once, without a
// pause, and returns the best per-core rate of any 5 ms window after the
// first 20 ms: the rate the FMA pipes sustain while every core the peak
// counts is busy. A core runs faster for the first milliseconds of a
// vector load than it then holds (on a 2-vCPU Zen 5 host: about 3.65 GHz
// over the first millisecond, 3.45-3.5 from 5 ms on), and a GEMM runs for
// far longer, so the first 20 ms are not counted. The best window is the
// one least disturbed by the rest of the host, so the peak errs high (an
// efficiency errs low).
func vectorFMARate(cores int) (gflopsPerCore float64, bits int, ok bool) {
	run, flops, bits, ok := fmaLoop()
	if !ok {
		return 0, 0, false
	}
	g := timeFMALoop(run, flops, cores)
	return g, bits, g > 0
}

// timeFMALoop is vectorFMARate's timing of run (flops FLOPs an iteration).
func timeFMALoop(run func(n int), flops float64, cores int) float64 {
	cores = max(1, min(cores, runtime.GOMAXPROCS(0)))
	const (
		iters   = 10_000 // about 70 us at 2 x 512-bit FMAs per cycle and 3.5 GHz
		warm    = 20 * time.Millisecond
		window  = 5 * time.Millisecond
		windows = 16
	)
	best := make([]float64, cores)
	var wg sync.WaitGroup
	for c := range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t0 := time.Now(); time.Since(t0) < warm; {
				run(iters)
			}
			for range windows {
				n, t0 := 0, time.Now()
				for ; time.Since(t0) < window; n++ {
					run(iters)
				}
				best[c] = max(best[c], float64(n)*iters*flops/time.Since(t0).Seconds()/1e9)
			}
		}()
	}
	wg.Wait()
	return slices.Max(best)
}
