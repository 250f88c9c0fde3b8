package bench

import (
	"math"
	"strings"
	"testing"

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

// TestEstimateClock runs the dependent-FMA clock estimate once. Its figure
// is this host's speed under whatever load it has, so it is only logged:
// the test asserts that the estimate is a finite positive rate.
func TestEstimateClock(t *testing.T) {
	g := estimateClockGHz(4)
	if !(g > 0) || math.IsInf(g, 0) {
		t.Errorf("estimateClockGHz(4) = %v, want a finite positive clock", g)
	}
	t.Logf("estimated clock on this host, at 4 cycles per FMA: %.2f GHz (not judged)", g)
}

// TestCPUPeakFromCatalog: a CPU the catalog knows gets its sustained clock
// (never the turbo), its pipes and its bf16 and int8 rates (those of the
// AVX-512 instructions hwprobe runs: on Sapphire Rapids the AMX rates are
// named as present and unused, never taken as the peak);
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
		AVX512: true, AVX2: true, AVX512BF16: true, AVX512VNNI: true, AMXBF16: true, AMXInt8: true}
	p := cpuPeakFor(spr, 4, clk)
	if p.ClockSource != "catalog" || p.ClockGHz != 3.2 || p.Cores != 4 || p.GFLOPS32() != 4*3.2*64 || p.GFLOPSBF16() != 4*3.2*128 || p.GOPSInt8() != 4*3.2*256 {
		t.Errorf("sapphire rapids peak = %+v (fp32 %g, bf16 %g, int8 %g)", p, p.GFLOPS32(), p.GFLOPSBF16(), p.GOPSInt8())
	}
	if !strings.Contains(p.Int8Basis, "VPDPBUSD") || p.GFLOPSBF16AMX() != 4*3.2*1024 || p.GOPSInt8AMX() != 4*3.2*2048 || !strings.Contains(p.AMXBasis, "TDPBF16PS") {
		t.Errorf("sapphire rapids: int8 basis %q, AMX bf16 %g int8 %g (basis %q); want VNNI, and the tile units at 1024 and 2048 per cycle per core",
			p.Int8Basis, p.GFLOPSBF16AMX(), p.GOPSInt8AMX(), p.AMXBasis)
	}
	if p.params()["peak_estimated"] != "" || gotCores != 0 || gotLatency != 0 {
		t.Errorf("catalog peak marked estimated or timed: %v (timed on %d cores, latency %d)", p.params(), gotCores, gotLatency)
	}

	// Zen 5 off the catalog: 220 GFLOP/s per core from 512-bit FMAs on 2
	// pipes x 16 lanes is 3.4375 GHz, and the peak is the measured rate.
	zen5 := hostCPU{ModelName: "AMD EPYC", Vendor: cpuid.AMD, Family: 0x1a, Model: 0x02, Cores: 2, AVX512: true, AVX2: true, AVX512BF16: true, AVX512VNNI: true}
	p = cpuPeakFor(zen5, 0, clk)
	if p.ClockGHz != 3.4375 || p.GFLOPS32() != 440 || p.GFLOPSBF16() != 880 || p.GOPSInt8() != 1760 || strings.Contains(p.Int8Basis+p.BF16Basis+p.AMXBasis, "AMX") || p.GFLOPSBF16AMX() != 0 || gotCores != 2 || gotLatency != 0 ||
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

	// Without a vector loop, the chain with Zen 2's 5-cycle latency; int8
	// without VNNI at AVX2's rate, twice the fp32 one.
	vectorOK = false
	rome := hostCPU{ModelName: "AMD EPYC 7702 64-Core Processor", Vendor: cpuid.AMD, Family: 0x17, Model: 0x31, Cores: 2, AVX2: true}
	p = cpuPeakFor(rome, 0, clk)
	if gotLatency != 5 || p.ClockGHz != 2 || p.ClockSource != "estimated" || p.params()["peak_estimated"] != "true" ||
		p.GFLOPSBF16() != p.GFLOPS32() || p.GOPSInt8() != 2*p.GFLOPS32() || !strings.Contains(p.Int8Basis, "VPMADDUBSW") ||
		!strings.Contains(p.Source, "dependent FMA chain at 5 cycles") {
		t.Errorf("zen 2 peak = %+v, latency %d", p, gotLatency)
	}
	p = cpuPeakFor(zen5, 0, clk)
	if gotLatency != 4 || p.VectorBits != 512 || p.GFLOPSBF16() != 2*p.GFLOPS32() {
		t.Errorf("zen 5 chain peak = %+v, latency %d", p, gotLatency)
	}
}
