package machine

import (
	"context"
	"slices"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
)

// Each description, probed by hwprobe's real collectors, is the machine it
// says, whatever machine runs the test.
func TestBuiltinProbed(t *testing.T) {
	tests := []struct {
		name           string
		vendor         string
		threads, cores int
		have, lack     []string
		minGiB, maxGiB float64
	}{
		{Zen5, "AuthenticAMD", 2, 1, []string{"avx512f", "avx512_bf16", "avx512_vnni", "avx2", "fma"}, []string{"amx_tile", "amx_bf16", "amx_int8", "avx512_fp16"}, 3.6, 4},
		{SapphireRapids, "GenuineIntel", 2, 1, []string{"avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"}, nil, 3.6, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Builtin(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := probe.Probe(context.Background(), probe.Config{FS: d.FS(), CPUID: d.CPUID()})
			if err != nil {
				t.Fatal(err)
			}
			c := inv.CPU
			if c.Vendor != tt.vendor || c.Threads != tt.threads || c.Cores != tt.cores || c.Sockets != 1 || c.NUMANodes != 1 {
				t.Errorf("cpu = %+v", c)
			}
			if gib := float64(c.MemoryBytes) / (1 << 30); gib < tt.minGiB || gib > tt.maxGiB {
				t.Errorf("memory %.2f GiB, want %g to %g", gib, tt.minGiB, tt.maxGiB)
			}
			for _, f := range tt.have {
				if !slices.Contains(c.Features, f) {
					t.Errorf("feature %s missing from %v", f, c.Features)
				}
			}
			for _, f := range tt.lack {
				if slices.Contains(c.Features, f) {
					t.Errorf("feature %s present in %v", f, c.Features)
				}
			}
			if len(c.FeatureMismatches) > 0 {
				t.Errorf("cpuid and kernel disagree: %v", c.FeatureMismatches)
			}
			for _, col := range inv.Collectors {
				if (col.Name == probe.CollectorCPU || col.Name == probe.CollectorNetwork) && col.Error != "" {
					t.Errorf("collector %s: %s", col.Name, col.Error)
				}
			}
		})
	}
}

func TestBuiltinUnknown(t *testing.T) {
	if _, err := Builtin("pentium"); err == nil {
		t.Error("unknown machine accepted")
	}
}
