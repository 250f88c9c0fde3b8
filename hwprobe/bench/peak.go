package bench

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// cpuPeak is the theoretical fp32 peak of the cores a benchmark uses:
// cores x clock x FMA units x (vector bits / 32) x 2; and the bf16 peak.
type cpuPeak struct {
	Cores        int
	ClockGHz     float64
	ClockSource  string // "catalog" (sustained all-core clock) or "estimated" (timed FMA chain)
	FMAUnits     int
	VectorBits   int
	BF16PerCycle int    // bf16 FLOPs per cycle per core; 0 means the fp32 rate
	BF16Basis    string // what BF16PerCycle rests on
	Source       string // the catalog row, or why the peak is estimated
	Note         string
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
	AMXBF16       bool
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
		AVX512BF16: c.Supports(cpuid.AVX512BF16), AMXBF16: c.Supports(cpuid.AMXBF16, cpuid.AMXTILE),
	}
}

// detectCPUPeak computes the peak for the given number of threads.
func detectCPUPeak(threads int) cpuPeak {
	return cpuPeakFor(currentCPU(), threads, estimateClockGHz)
}

// cpuPeakFor is the peak of threads cores of h. The catalog (matched
// exactly by model name) gives the sustained all-core clock and the pipe
// shape; a CPU it does not know gets a clock timed from a dependent FMA
// chain with its generation's FMA latency, and says so. The turbo clock in
// cpufreq's cpuinfo_max_freq is never used: no core sustains it under a
// vector load on all cores.
func cpuPeakFor(h hostCPU, threads int, estimate func(fmaLatency int) float64) cpuPeak {
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
		lat, known := catalog.FMALatencyCycles(vendorName(h.Vendor), h.Family, h.Model)
		p.ClockGHz, p.ClockSource = estimate(lat), "estimated"
		p.Source = fmt.Sprintf("estimated: %q is not in the catalog; clock timed from a dependent FMA chain at %d cycles per FMA", h.ModelName, lat)
		if !known {
			p.Source += " (latency assumed: generation unknown)"
		}
		p.Note = note
	}
	fp32 := p.FMAUnits * p.VectorBits / 32 * 2
	switch {
	case h.AMXBF16:
		p.BF16PerCycle, p.BF16Basis = 1024, "AMX-BF16 tiles: 1024 FLOPs/cycle/core"
	case h.AVX512BF16:
		p.BF16PerCycle, p.BF16Basis = 2*fp32, "AVX512_BF16 dot products: twice the fp32 FMA rate"
	default:
		p.BF16PerCycle, p.BF16Basis = fp32, "no bf16 instructions: bf16 computed at the fp32 rate"
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
