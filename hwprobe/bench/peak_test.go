package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/klauspost/cpuid/v2"
)

func TestCPUPeakFormula(t *testing.T) {
	tests := []struct {
		name string
		p    cpuPeak
		want float64
	}{
		{"zen5 2 cores 2.1GHz", cpuPeak{Cores: 2, ClockGHz: 2.1, FMAUnits: 2, VectorBits: 512}, 268.8},
		{"avx2 8 cores 3GHz", cpuPeak{Cores: 8, ClockGHz: 3, FMAUnits: 2, VectorBits: 256}, 768},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.GFLOPS32(); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Errorf("GFLOPS32() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFMAShape(t *testing.T) {
	tests := []struct {
		name                string
		vendor              cpuid.Vendor
		family              int
		avx512, avx2, sve   bool
		wantUnits, wantBits int
	}{
		{"zen5", cpuid.AMD, 0x1a, true, true, false, 2, 512},
		{"zen4", cpuid.AMD, 0x19, true, true, false, 2, 256},
		{"skylake-sp", cpuid.Intel, 6, true, true, false, 2, 512},
		{"haswell", cpuid.Intel, 6, false, true, false, 2, 256},
		{"neon", cpuid.ARM, 0, false, false, false, 2, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, b, _ := fmaShape(tt.vendor, tt.family, tt.avx512, tt.avx2, tt.sve)
			if u != tt.wantUnits || b != tt.wantBits {
				t.Errorf("fmaShape = %d x %d, want %d x %d", u, b, tt.wantUnits, tt.wantBits)
			}
		})
	}
}

func TestEstimateClock(t *testing.T) {
	if g := estimateClockGHz(4); g < 0.2 || g > 10 {
		t.Errorf("estimateClockGHz() = %v GHz, implausible", g)
	}
	t.Logf("estimated clock %.2f GHz; peak %+v", estimateClockGHz(4), detectCPUPeak(0))
}

// TestCPUPeakFromCatalog: a CPU the catalog knows gets its sustained clock
// (never the turbo), its pipes and its bf16 rate (AMX on Sapphire Rapids);
// one it does not know gets an estimate that says so: the clock from the
// vector FMA rate on the peak's cores where a vector loop runs, else timed
// with its generation's FMA latency (5 cycles on Zen 1 and 2).
func TestCPUPeakFromCatalog(t *testing.T) {
	var gotLatency, gotCores int
	vectorOK := true
	clk := clockTimers{
		vector: func(cores int) (float64, int, bool) { gotCores = cores; return 220, 512, vectorOK },
		chain:  func(lat int) float64 { gotLatency = lat; return 2.0 },
	}
	spr := hostCPU{ModelName: "Intel(R) Xeon(R) Platinum 8488C", Vendor: cpuid.Intel, Family: 6, Model: 0x8f, Cores: 48,
		AVX512: true, AVX2: true, AVX512BF16: true, AMXBF16: true}
	p := cpuPeakFor(spr, 4, clk)
	if p.ClockSource != "catalog" || p.ClockGHz != 3.2 || p.Cores != 4 || p.GFLOPS32() != 4*3.2*64 || p.GFLOPSBF16() != 4*3.2*1024 {
		t.Errorf("sapphire rapids peak = %+v (fp32 %g, bf16 %g)", p, p.GFLOPS32(), p.GFLOPSBF16())
	}
	if p.params()["peak_estimated"] != "" || gotCores != 0 || gotLatency != 0 {
		t.Errorf("catalog peak marked estimated or timed: %v (timed on %d cores, latency %d)", p.params(), gotCores, gotLatency)
	}

	// Zen 5 off the catalog: 220 GFLOP/s per core from 512-bit FMAs on 2
	// pipes x 16 lanes is 3.4375 GHz, and the peak is the measured rate.
	zen5 := hostCPU{ModelName: "AMD EPYC", Vendor: cpuid.AMD, Family: 0x1a, Model: 0x02, Cores: 2, AVX512: true, AVX2: true, AVX512BF16: true}
	p = cpuPeakFor(zen5, 0, clk)
	if p.ClockGHz != 3.4375 || p.GFLOPS32() != 440 || p.GFLOPSBF16() != 880 || gotCores != 2 || gotLatency != 0 ||
		p.params()["peak_estimated"] != "true" || !strings.Contains(p.Source, "512-bit FMAs on 2 cores") {
		t.Errorf("zen 5 peak = %+v (fp32 %g), timed on %d cores, latency %d", p, p.GFLOPS32(), gotCores, gotLatency)
	}
	// Zen 4 runs AVX-512 on 256-bit pipes: the same measured rate is a
	// clock twice as high, and the peak is still the measured rate.
	zen4 := zen5
	zen4.Family = 0x19
	if p = cpuPeakFor(zen4, 1, clk); p.ClockGHz != 6.875 || p.GFLOPS32() != 220 || gotCores != 1 {
		t.Errorf("zen 4 peak = %+v (fp32 %g), timed on %d cores", p, p.GFLOPS32(), gotCores)
	}

	// Without a vector loop, the chain with Zen 2's 5-cycle latency.
	vectorOK = false
	rome := hostCPU{ModelName: "AMD EPYC 7702 64-Core Processor", Vendor: cpuid.AMD, Family: 0x17, Model: 0x31, Cores: 2, AVX2: true}
	p = cpuPeakFor(rome, 0, clk)
	if gotLatency != 5 || p.ClockGHz != 2 || p.ClockSource != "estimated" || p.params()["peak_estimated"] != "true" ||
		p.GFLOPSBF16() != p.GFLOPS32() || !strings.Contains(p.Source, "dependent FMA chain at 5 cycles") {
		t.Errorf("zen 2 peak = %+v, latency %d", p, gotLatency)
	}
	p = cpuPeakFor(zen5, 0, clk)
	if gotLatency != 4 || p.VectorBits != 512 || p.GFLOPSBF16() != 2*p.GFLOPS32() {
		t.Errorf("zen 5 chain peak = %+v, latency %d", p, gotLatency)
	}
}

// TestVectorPeakBoundsKernel checks the measured vector peak against the
// fastest code this package has: the fp32 micro-kernel on panels in L1
// cannot run faster than the FMA pipes it is made of. A peak built on the
// wrong width or pipe count (off by 2x) fails; timing noise does not
// reach the 10% margin, since both sides are the best of several windows.
func TestVectorPeakBoundsKernel(t *testing.T) {
	kern := sgemmKernels()[0]
	if kern.name != "builtin-avx512" {
		t.Skip("no AVX-512 micro-kernel on this host")
	}
	const k = 128
	a, b, c := make([]float32, kern.mr*k), make([]float32, kern.nr*k), make([]float32, kern.mr*kern.nr)
	for i := range a {
		a[i] = float32(i%7) * 1e-3
	}
	for i := range b {
		b[i] = float32(i%5) * 1e-3
	}
	hot := 0.0
	for range 6 {
		n, t0 := 0, time.Now()
		for ; time.Since(t0) < 20*time.Millisecond; n++ {
			kern.fn(k, &a[0], &b[0], &c[0], kern.nr)
		}
		hot = max(hot, float64(n)*2*float64(kern.mr*kern.nr*k)/time.Since(t0).Seconds()/1e9)
	}
	peak, bits, ok := vectorFMARate(1)
	if !ok || bits != 512 {
		t.Fatalf("vectorFMARate(1) = %v, %d bits, ok %v; want a 512-bit rate on an AVX-512 host", peak, bits, ok)
	}
	t.Logf("micro-kernel on L1 panels %.1f GFLOP/s, vector FMA peak %.1f GFLOP/s per core (%.0f%%)", hot, peak, 100*hot/peak)
	if hot > 1.1*peak {
		t.Errorf("the micro-kernel runs %.1f GFLOP/s, above the measured peak of one core, %.1f", hot, peak)
	}
}
