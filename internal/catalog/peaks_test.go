package catalog

import "testing"

func TestGPUPeakExactMatch(t *testing.T) {
	tests := []struct {
		name      string
		wantBF16  float64
		wantHBM   float64
		wantKnown bool
	}{
		{"NVIDIA H100 80GB HBM3", 989, 3350, true},
		{"NVIDIA H100 NVL", 835, 3900, true}, // not the SXM figures
		{"NVIDIA H100 PCIe", 756, 2000, true},
		{"NVIDIA L40", 181, 864, true}, // not the L4 figures
		{"NVIDIA L40S", 362, 864, true},
		{"NVIDIA L4", 121, 300, true},
		{" nvidia l4 ", 121, 300, true},
		{"NVIDIA L4X", 0, 0, false},
		{"H100", 0, 0, false},
		{"Stub GPU (test double)", 0, 0, false},
	}
	for _, tt := range tests {
		p, ok := GPUPeakByDeviceName(tt.name)
		if ok != tt.wantKnown || p.BF16 != tt.wantBF16 || p.HBMGBps != tt.wantHBM {
			t.Errorf("GPUPeakByDeviceName(%q) = %+v, %v", tt.name, p, ok)
		}
	}
}

// TestGPUPeaksAgreeWithInstanceTypes: the instance types' GPU peaks and the
// SKU table are one source: every GPU an instance type carries has its SKU,
// with the same figures.
func TestGPUPeaksAgreeWithInstanceTypes(t *testing.T) {
	c, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range c.Names() {
		it, _ := c.Lookup(name)
		if it.GPU == nil {
			continue
		}
		found := false
		for _, p := range GPUPeaks() {
			if p.EC2Model != it.GPU.Model || p.MemoryGiB != it.GPU.MemoryGiB {
				continue
			}
			found = true
			if p.BF16 != it.GPU.PeakBF16TFLOPS || p.HBMGBps != it.GPU.MemoryBandwidthGBps {
				t.Errorf("%s: %s %d GiB peaks %g/%g, SKU table %g/%g", name, it.GPU.Model, it.GPU.MemoryGiB,
					it.GPU.PeakBF16TFLOPS, it.GPU.MemoryBandwidthGBps, p.BF16, p.HBMGBps)
			}
		}
		if !found {
			t.Errorf("%s: no SKU for %s %d GiB", name, it.GPU.Model, it.GPU.MemoryGiB)
		}
	}
}

func TestCPUCoreAndFMALatency(t *testing.T) {
	c, ok := CPUCoreByModelName("Intel(R) Xeon(R) Platinum  8488C")
	if !ok || c.SustainedClockGHz != 3.2 || c.BF16PerCycle != 1024 || c.FP32PerCycle() != 64 {
		t.Errorf("8488C = %+v, %v", c, ok)
	}
	if _, ok := CPUCoreByModelName("AMD EPYC"); ok {
		t.Error("a masked model name matched")
	}
	tests := []struct {
		vendor        string
		family, model int
		want          int
		known         bool
	}{
		{"AMD", 0x17, 0x31, 5, true}, // Zen 2
		{"AMD", 0x17, 0x01, 5, true}, // Zen 1
		{"AMD", 0x19, 0x01, 4, true}, // Zen 3
		{"AMD", 0x1a, 0x02, 4, true}, // Zen 5
		{"Intel", 6, 0x3f, 5, true},  // Haswell
		{"Intel", 6, 0x8f, 4, true},  // Sapphire Rapids
		{"AMD", 0x15, 0, 4, false},
	}
	for _, tt := range tests {
		got, ok := FMALatencyCycles(tt.vendor, tt.family, tt.model)
		if got != tt.want || ok != tt.known {
			t.Errorf("FMALatencyCycles(%s, %#x, %#x) = %d, %v", tt.vendor, tt.family, tt.model, got, ok)
		}
	}
}
