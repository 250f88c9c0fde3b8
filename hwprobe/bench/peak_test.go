package bench

import (
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

func TestParseKHz(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"3500000\n", 3.5, false},
		{"2100000", 2.1, false},
		{"", 0, true},
		{"-5", 0, true},
		{"abc", 0, true},
	}
	for _, tt := range tests {
		got, err := parseKHz(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseKHz(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseKHz(f *testing.F) {
	f.Add("3500000")
	f.Add("x")
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseKHz(s); err == nil && v <= 0 {
			t.Fatalf("parseKHz(%q) = %v without error", s, v)
		}
	})
}

func TestEstimateClock(t *testing.T) {
	if g := estimateClockGHz(); g < 0.2 || g > 10 {
		t.Errorf("estimateClockGHz() = %v GHz, implausible", g)
	}
	t.Logf("estimated clock %.2f GHz; peak %+v", estimateClockGHz(), detectCPUPeak(0))
}
