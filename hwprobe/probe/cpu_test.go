package probe

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klauspost/cpuid/v2"
)

// TestCPURealHost probes the machine the tests run on and checks what must
// be true of any real CPU.
func TestCPURealHost(t *testing.T) {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo:", err)
	}
	c, err := collectCPU(os.DirFS("/"), &cpuid.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cores <= 0 || c.Threads < c.Cores || c.Sockets <= 0 || c.Sockets > c.Cores || c.NUMANodes <= 0 {
		t.Errorf("topology: %+v", c)
	}
	if c.MemoryBytes < 64<<20 {
		t.Errorf("memory = %d bytes", c.MemoryBytes)
	}
	if c.Vendor == "" || c.Model == "" {
		t.Errorf("vendor %q model %q", c.Vendor, c.Model)
	}
	info := ParseCPUInfo(raw)
	if c.Threads > info.Processors {
		t.Errorf("%d threads online but /proc/cpuinfo lists %d processors", c.Threads, info.Processors)
	}
	kernel := map[string]bool{}
	for _, f := range info.Flags {
		kernel[f] = true
	}
	for _, f := range c.Features {
		if !kernel[f] {
			t.Errorf("feature %q reported but not in /proc/cpuinfo", f)
		}
	}
	for _, f := range trackedFeatures() {
		if kernel[f.name] && cpuid.CPU.Supports(f.id) && !slices.Contains(c.Features, f.name) {
			t.Errorf("feature %q in /proc/cpuinfo and cpuid but not reported", f.name)
		}
	}
	if strings.Contains(strings.Join(info.Flags, " "), "avx512f") != slices.Contains(c.Features, "avx512f") && len(c.FeatureMismatches) == 0 {
		t.Errorf("avx512f disagrees with /proc/cpuinfo and no mismatch recorded")
	}
}

const cpuinfoX86 = `processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8488C
physical id	: 0
core id		: 0
flags		: fpu sse4_2 avx avx2 fma avx512f amx_tile amx_bf16

processor	: 1
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8488C
physical id	: 0
core id		: 0
flags		: fpu sse4_2 avx avx2 fma avx512f amx_tile amx_bf16

processor	: 2
vendor_id	: GenuineIntel
physical id	: 1
core id		: 0
flags		: fpu

processor	: 3
vendor_id	: GenuineIntel
physical id	: 1
core id		: 1
flags		: fpu
`

const cpuinfoARM = `processor	: 0
BogoMIPS	: 243.75
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve
CPU implementer	: 0x41
CPU architecture: 8

processor	: 1
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve
CPU implementer	: 0x41
`

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want CPUInfo
	}{
		{"x86 two sockets", cpuinfoX86, CPUInfo{Processors: 4, Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8488C",
			Flags: []string{"amx_bf16", "amx_tile", "avx", "avx2", "avx512f", "fma", "fpu", "sse4_2"}, Sockets: 2, Cores: 3}},
		{"arm64", cpuinfoARM, CPUInfo{Processors: 2, Vendor: "ARM",
			Flags: []string{"aes", "asimd", "asimdhp", "asimdrdm", "atomics", "cpuid", "crc32", "evtstrm", "fp", "fphp", "pmull", "sha1", "sha2", "sve"}}},
		{"empty", "", CPUInfo{}},
		{"garbage", "processor : x\nno colon here\n", CPUInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCPUInfo([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0", []int{0}, true},
		{"0-3\n", []int{0, 1, 2, 3}, true},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, true},
		{"", nil, true},
		{"3-1", nil, false},
		{"a", nil, false},
		{"-1", nil, false},
		{"0-99999999", nil, false},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if (err == nil) != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"MemTotal:       24576000 kB\nMemFree: 1 kB\n", 24576000 * 1024, true},
		{"MemFree: 1 kB\n", 0, false},
		{"MemTotal: lots kB\n", 0, false},
		{"MemTotal: 12 MB\n", 0, false},
		{"MemTotal:\n", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseMemTotal([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMemTotal(%q) = %d, %v", tt.in, got, err)
		}
	}
}

func TestCollectCPUFromSysfs(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/cpuinfo":                   {Data: []byte(cpuinfoX86)},
		"proc/meminfo":                   {Data: []byte("MemTotal: 1048576 kB\n")},
		"sys/devices/system/cpu/online":  {Data: []byte("0-3\n")},
		"sys/devices/system/node/online": {Data: []byte("0-1\n")},
	}
	for i, topo := range [][2]string{{"0", "0"}, {"0", "0"}, {"1", "0"}, {"1", "1"}} {
		dir := "sys/devices/system/cpu/cpu" + string(rune('0'+i)) + "/topology/"
		fsys[dir+"physical_package_id"] = &fstest.MapFile{Data: []byte(topo[0] + "\n")}
		fsys[dir+"core_id"] = &fstest.MapFile{Data: []byte(topo[1] + "\n")}
	}
	c, err := collectCPU(fsys, &cpuid.CPUInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sockets != 2 || c.Cores != 3 || c.Threads != 4 || c.NUMANodes != 2 || c.MemoryBytes != 1<<30 {
		t.Errorf("cpu = %+v", c)
	}
	if c.Vendor != "GenuineIntel" || c.Model != "Intel(R) Xeon(R) Platinum 8488C" {
		t.Errorf("vendor %q model %q", c.Vendor, c.Model)
	}
	// cpuid reports nothing here, so every kernel flag is a mismatch, none a feature.
	if len(c.Features) != 0 || !slices.Contains(c.FeatureMismatches, "amx_tile (only kernel)") {
		t.Errorf("features %v mismatches %v", c.Features, c.FeatureMismatches)
	}
}

func TestCollectCPUNoProc(t *testing.T) {
	if _, err := collectCPU(fstest.MapFS{}, &cpuid.CPUInfo{}); err == nil {
		t.Error("no /proc/cpuinfo accepted")
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add([]byte(cpuinfoX86))
	f.Add([]byte(cpuinfoARM))
	f.Add([]byte("processor: 0\nphysical id: 0\ncore id: 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info := ParseCPUInfo(data)
		if info.Processors < 0 || info.Cores < 0 || info.Sockets < 0 {
			t.Fatalf("negative counts %+v", info)
		}
		if info.Processors > len(data) {
			t.Fatalf("%d processors from %d bytes", info.Processors, len(data))
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3", "0-1,4,6-7", "", "3-1", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := ParseCPUList(s)
		if err == nil && len(out) > 1<<17 {
			t.Fatalf("%d entries", len(out))
		}
	})
}

func FuzzParseMemTotal(f *testing.F) {
	f.Add([]byte("MemTotal:       24576000 kB\n"))
	f.Add([]byte("MemTotal: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseMemTotal(data)
	})
}
