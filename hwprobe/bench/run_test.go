package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestSelection(t *testing.T) {
	tests := []struct {
		name    string
		only    []string
		want    []string
		wantErr bool
	}{
		{"all", nil, Names(), false},
		{"exact", []string{"cpu_sgemm"}, []string{"cpu_sgemm"}, false},
		{"prefix", []string{"cpu_stream_*"}, []string{"cpu_stream_copy", "cpu_stream_scale", "cpu_stream_add", "cpu_stream_triad"}, false},
		{"unknown", []string{"cpu_nope"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := selection(tt.only)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(sel) != len(tt.want) {
				t.Fatalf("selected %d names, want %d", len(sel), len(tt.want))
			}
			for _, n := range tt.want {
				if !sel[n] {
					t.Errorf("%s not selected", n)
				}
			}
		})
	}
}

func TestNamesStableAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names() {
		if seen[n] || n != strings.ToLower(n) || !(strings.HasPrefix(n, "cpu_") || strings.HasPrefix(n, "gpu_")) {
			t.Errorf("bad or duplicate name %q", n)
		}
		seen[n] = true
	}
}

// TestRunSmall runs the CPU benchmarks at tiny sizes through the public API.
func TestRunSmall(t *testing.T) {
	var progress strings.Builder
	rs, err := Run(context.Background(), Options{
		Quick: true, Only: []string{"cpu_sgemm", "cpu_bf16_gemm", "cpu_int8_gemm", "cpu_mlp_*"}, GemmN: 256, Reps: 2,
		Progress: &progress, BLASLibraries: []string{},
	})
	if err != nil {
		t.Fatal(err)
	}
	// sgemm, bf16, int8; the fp32 MLP's 5 and the int8 MLP's 4 (cpu_mlp_*).
	if len(rs) != 12 {
		t.Fatalf("got %d results, want 12", len(rs))
	}
	_, vnni := i8Kernel()
	for _, r := range rs {
		if r.Name == "cpu_bf16_gemm" && r.Ran && r.Params["compute"] != "" && !slices.ContainsFunc(sgemmKernels(), func(k sgemmKernel) bool { return k.name == r.Backend }) {
			t.Errorf("cpu_bf16_gemm widened its inputs on %s, not an fp32 kernel", r.Backend)
		}
		if !r.Ran {
			if !vnni && (r.Name == "cpu_int8_gemm" || strings.HasPrefix(r.Name, "cpu_mlp_int8_")) && strings.Contains(r.Reason, "avx512_vnni") {
				continue
			}
			t.Errorf("%s did not run: %s", r.Name, r.Reason)
			continue
		}
		if r.Value <= 0 || r.Unit == "" || r.Reps == 0 {
			t.Errorf("%s: incomplete result %+v", r.Name, r)
		}
	}
	if !strings.Contains(progress.String(), "CPU sgemm") {
		t.Errorf("no progress written: %q", progress.String())
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Options{Only: []string{"cpu_sgemm"}}); err == nil {
		t.Fatal("Run with a cancelled context returned no error")
	}
}

// asmStream is an assembly STREAM kernel set and why it cannot run on this
// host ("" where it can).
type asmStream struct {
	name    string
	impl    streamImpl
	missing string
}

// TestStreamSmall runs the STREAM kernels at a tiny size and checks their
// arrays: the portable ones on every host, each assembly set where the
// host has its instructions (reported as skipped elsewhere). Nothing is
// judged by speed. streamKernels must pick the first set this host runs.
func TestStreamSmall(t *testing.T) {
	picked, ok := streamKernels()
	want := ""
	cases := []asmStream{{"portable", genericStream(), ""}}
	for _, s := range asmStreams() {
		if s.missing == "" && want == "" {
			want = s.impl.name
		}
		cases = append(cases, s)
	}
	if want != "" && (!ok || picked.name != want) {
		t.Errorf("streamKernels gave %s (assembly %v), want %s", picked.name, ok, want)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.missing != "" {
				t.Skipf("assembly STREAM kernels %s not tested: %s", tc.name, tc.missing)
			}
			rs, err := streamResults(context.Background(), streamConfig{elements: 1 << 16, reps: 2, threads: 2}, tc.impl, nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.impl.name, err)
			}
			if len(rs) != 4 || !rs[3].Ran || rs[3].Name != "cpu_stream_triad" || rs[3].Value <= 0 {
				t.Fatalf("%s: results %+v", tc.impl.name, rs)
			}
		})
	}
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"32768K\n", 32 << 20, false},
		{"1M", 1 << 20, false},
		{"512", 512, false},
		{"x", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCacheSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseCacheSize(%q) = %d, %v", tt.in, got, err)
		}
	}
}

func FuzzParseCacheSize(f *testing.F) {
	f.Add("32768K")
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseCacheSize(s); err == nil && v < 0 {
			t.Fatalf("negative size %d for %q", v, s)
		}
	})
}

func TestSysfsLLC(t *testing.T) {
	root := t.TempDir()
	write := func(cpu, idx, level, size, shared string) {
		dir := root + "/" + cpu + "/cache/" + idx
		mustWrite(t, dir+"/level", level)
		mustWrite(t, dir+"/size", size)
		mustWrite(t, dir+"/shared_cpu_list", shared)
	}
	// Two L3 instances of 32 MiB (two CCXs), one L2 per CPU.
	write("cpu0", "index2", "2", "1024K", "0")
	write("cpu0", "index3", "3", "32768K", "0-1")
	write("cpu1", "index3", "3", "32768K", "0-1")
	write("cpu2", "index3", "3", "32768K", "2-3")
	got, err := sysfsLLC(root)
	if err != nil || got != 64<<20 {
		t.Fatalf("sysfsLLC = %d, %v; want 64 MiB", got, err)
	}
}
