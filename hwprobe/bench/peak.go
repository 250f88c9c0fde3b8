package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"
)

// cpuPeak is the theoretical fp32 peak of the cores a benchmark uses:
// cores x clock x FMA units x (vector bits / 32) x 2.
type cpuPeak struct {
	Cores       int
	ClockGHz    float64
	ClockSource string // "cpufreq" or "estimated"
	FMAUnits    int
	VectorBits  int
	Note        string
}

// GFLOPS32 is the fp32 peak in GFLOP/s.
func (p cpuPeak) GFLOPS32() float64 {
	return float64(p.Cores) * p.ClockGHz * float64(p.FMAUnits) * float64(p.VectorBits/32) * 2
}

// params describes the peak for a Result.
func (p cpuPeak) params() map[string]string {
	m := map[string]string{
		"peak_cores":        strconv.Itoa(p.Cores),
		"peak_clock_ghz":    strconv.FormatFloat(p.ClockGHz, 'f', 2, 64),
		"peak_clock_source": p.ClockSource,
		"peak_fma_units":    strconv.Itoa(p.FMAUnits),
		"peak_vector_bits":  strconv.Itoa(p.VectorBits),
	}
	if p.Note != "" {
		m["peak_note"] = p.Note
	}
	return m
}

// fmaShape is the number of FMA pipes and their effective width for a CPU,
// from its vendor, family and ISA. It is a small table: refine it, or take
// the figure from the catalog, when a CPU is known better.
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

// detectCPUPeak computes the peak for the given number of threads; the clock
// comes from cpufreq when present, else from a timed dependent-FMA chain.
func detectCPUPeak(threads int) cpuPeak {
	c := cpuid.CPU
	// Hypervisors report odd core counts through CPUID: trust the online
	// CPUs divided by the SMT width, and no more than the threads used.
	cores := runtime.NumCPU() / max(1, c.ThreadsPerCore)
	if c.PhysicalCores > 0 {
		cores = min(cores, c.PhysicalCores)
	}
	if threads > 0 {
		cores = min(cores, threads)
	}
	units, bits, note := fmaShape(c.VendorID, c.Family,
		c.Supports(cpuid.AVX512F), c.Supports(cpuid.AVX2, cpuid.FMA3), c.Supports(cpuid.SVE))
	p := cpuPeak{Cores: max(1, cores), FMAUnits: units, VectorBits: bits, Note: note}
	if ghz, err := readMaxFreqGHz("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		p.ClockGHz, p.ClockSource = ghz, "cpufreq"
	} else {
		p.ClockGHz, p.ClockSource = estimateClockGHz(), "estimated"
	}
	return p
}

func readMaxFreqGHz(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading max clock: %w", err)
	}
	return parseKHz(string(b))
}

// parseKHz parses a cpufreq value in kHz into GHz.
func parseKHz(s string) (float64, error) {
	khz, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("parsing cpufreq: %w", err)
	}
	if khz <= 0 || math.IsInf(khz, 0) || math.IsNaN(khz) {
		return 0, fmt.Errorf("parsing cpufreq: implausible value %q", s)
	}
	return khz / 1e6, nil
}

// fmaLatencyCycles is the scalar FMA latency assumed by estimateClockGHz: four
// cycles on current x86 (Intel since Skylake, AMD since Zen) and Neoverse.
const fmaLatencyCycles = 4

// estimateClockGHz times a chain of dependent FMAs and returns the best of
// many short runs: the clock a busy core reaches. Short runs make it likely
// that at least one is not interrupted on a shared host.
func estimateClockGHz() float64 {
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
		best = max(best, n*fmaLatencyCycles/el/1e9)
	}
	return best
}
