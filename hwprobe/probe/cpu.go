package probe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// CPU is the processor and memory inventory.
type CPU struct {
	Arch        string `json:"arch"`
	Vendor      string `json:"vendor"`
	Model       string `json:"model"`
	Sockets     int    `json:"sockets"`
	Cores       int    `json:"cores"`   // physical cores, all sockets
	Threads     int    `json:"threads"` // logical CPUs online
	NUMANodes   int    `json:"numa_nodes"`
	MemoryBytes uint64 `json:"memory_bytes"`
	// Features lists the tracked ISA features (names as in /proc/cpuinfo)
	// that both the CPU (cpuid) and the kernel report: usable ones.
	Features []string `json:"features"`
	// FeatureMismatches names tracked features the CPU and the kernel
	// disagree on (for example a hypervisor that hides AVX-512 state).
	FeatureMismatches []string `json:"feature_mismatches,omitempty"`
	Hypervisor        string   `json:"hypervisor,omitempty"`
}

type isaFeature struct {
	name string // /proc/cpuinfo spelling
	id   cpuid.FeatureID
}

// trackedFeatures are the ISA features hwprobe reports and profiles may
// require.
func trackedFeatures() []isaFeature {
	return []isaFeature{
		// x86
		{"sse4_2", cpuid.SSE42}, {"avx", cpuid.AVX}, {"avx2", cpuid.AVX2}, {"fma", cpuid.FMA3},
		{"f16c", cpuid.F16C}, {"bmi2", cpuid.BMI2}, {"aes", cpuid.AESNI}, {"sha_ni", cpuid.SHA},
		{"avx512f", cpuid.AVX512F}, {"avx512dq", cpuid.AVX512DQ}, {"avx512cd", cpuid.AVX512CD},
		{"avx512bw", cpuid.AVX512BW}, {"avx512vl", cpuid.AVX512VL}, {"avx512_vnni", cpuid.AVX512VNNI},
		{"avx512_bf16", cpuid.AVX512BF16}, {"avx512_fp16", cpuid.AVX512FP16}, {"avx_vnni", cpuid.AVXVNNI},
		{"amx_tile", cpuid.AMXTILE}, {"amx_bf16", cpuid.AMXBF16}, {"amx_int8", cpuid.AMXINT8},
		// arm64
		{"asimd", cpuid.ASIMD}, {"asimddp", cpuid.ASIMDDP}, {"asimdhp", cpuid.ASIMDHP},
		{"atomics", cpuid.ATOMICS}, {"sve", cpuid.SVE}, {"sha512", cpuid.SHA512},
	}
}

// TrackedFeature returns the cpuid feature of a tracked ISA feature named
// as /proc/cpuinfo spells it.
func TrackedFeature(name string) (cpuid.FeatureID, bool) {
	for _, f := range trackedFeatures() {
		if f.name == name {
			return f.id, true
		}
	}
	return 0, false
}

func collectCPU(fsys fs.FS, id *cpuid.CPUInfo) (CPU, error) {
	raw, err := fs.ReadFile(fsys, "proc/cpuinfo")
	if err != nil {
		return CPU{}, fmt.Errorf("cpuinfo: %w", err)
	}
	info := ParseCPUInfo(raw)
	c := CPU{Arch: runtime.GOARCH, Vendor: id.VendorString, Model: strings.TrimSpace(id.BrandName), Threads: info.Processors}
	if c.Vendor == "" {
		c.Vendor = info.Vendor
	}
	if c.Model == "" {
		c.Model = info.Model
	}
	if id.HypervisorVendorID != cpuid.VendorUnknown {
		c.Hypervisor = strings.TrimSpace(id.HypervisorVendorString)
	}

	var errs []error
	if online, err := fs.ReadFile(fsys, "sys/devices/system/cpu/online"); err == nil {
		if cpus, err := ParseCPUList(string(online)); err == nil && len(cpus) > 0 {
			c.Threads = len(cpus)
			c.Sockets, c.Cores = topology(fsys, cpus)
		}
	}
	if c.Cores == 0 { // no sysfs topology: fall back to /proc/cpuinfo
		c.Sockets, c.Cores = info.Sockets, info.Cores
	}
	if c.Cores == 0 && id.PhysicalCores > 0 {
		c.Cores = id.PhysicalCores
	}
	if c.Sockets == 0 && c.Cores > 0 {
		c.Sockets = 1
	}
	if c.Threads == 0 {
		c.Threads = id.LogicalCores
	}

	if nodes, err := fs.ReadFile(fsys, "sys/devices/system/node/online"); err == nil {
		if n, err := ParseCPUList(string(nodes)); err == nil {
			c.NUMANodes = len(n)
		}
	}
	if c.NUMANodes == 0 {
		c.NUMANodes = 1 // kernels without NUMA have one node
	}

	if mem, err := fs.ReadFile(fsys, "proc/meminfo"); err != nil {
		errs = append(errs, fmt.Errorf("meminfo: %w", err))
	} else if c.MemoryBytes, err = ParseMemTotal(mem); err != nil {
		errs = append(errs, err)
	}

	c.Features, c.FeatureMismatches = features(id, info.Flags)
	if c.Threads == 0 {
		errs = append(errs, errors.New("cpu: no processor found"))
	}
	return c, errors.Join(errs...)
}

// features keeps the tracked features that cpuid and the kernel both
// report. Without kernel flags (an unusual /proc), cpuid alone decides.
func features(id *cpuid.CPUInfo, kernelFlags []string) (have, mismatch []string) {
	kernel := map[string]bool{}
	for _, f := range kernelFlags {
		kernel[f] = true
	}
	have = []string{}
	for _, f := range trackedFeatures() {
		cpu := id.Supports(f.id)
		switch {
		case len(kernel) == 0 && cpu:
			have = append(have, f.name)
		case cpu && kernel[f.name]:
			have = append(have, f.name)
		case cpu != kernel[f.name] && len(kernel) > 0:
			who := "kernel"
			if cpu {
				who = "cpuid"
			}
			mismatch = append(mismatch, f.name+" (only "+who+")")
		}
	}
	return have, mismatch
}

// topology counts sockets and physical cores from sysfs.
func topology(fsys fs.FS, cpus []int) (sockets, cores int) {
	pkgs := map[string]bool{}
	coreIDs := map[string]bool{}
	for _, n := range cpus {
		dir := path.Join("sys/devices/system/cpu", "cpu"+strconv.Itoa(n), "topology")
		pkg, err1 := fs.ReadFile(fsys, dir+"/physical_package_id")
		core, err2 := fs.ReadFile(fsys, dir+"/core_id")
		if err1 != nil || err2 != nil {
			return 0, 0
		}
		p := string(bytes.TrimSpace(pkg))
		pkgs[p] = true
		coreIDs[p+"/"+string(bytes.TrimSpace(core))] = true
	}
	return len(pkgs), len(coreIDs)
}

// CPUInfo is what ParseCPUInfo reads from /proc/cpuinfo.
type CPUInfo struct {
	Processors int
	Vendor     string
	Model      string
	Flags      []string // x86 "flags" or arm64 "Features" of the first processor
	Sockets    int      // distinct "physical id" (x86 only; 0 when absent)
	Cores      int      // distinct (physical id, core id) pairs (x86 only)
}

// ParseCPUInfo reads /proc/cpuinfo text (x86 or arm64 layout).
func ParseCPUInfo(data []byte) CPUInfo {
	var info CPUInfo
	sockets := map[string]bool{}
	cores := map[string]bool{}
	var physID string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			if _, err := strconv.Atoi(val); err == nil {
				info.Processors++
			}
		case "vendor_id":
			setOnce(&info.Vendor, val)
		case "CPU implementer":
			setOnce(&info.Vendor, armImplementer(val))
		case "model name":
			setOnce(&info.Model, val)
		case "flags", "Features":
			if info.Flags == nil {
				info.Flags = strings.Fields(val)
				slices.Sort(info.Flags)
			}
		case "physical id":
			physID = val
			sockets[val] = true
		case "core id":
			cores[physID+"/"+val] = true
		}
	}
	info.Sockets, info.Cores = len(sockets), len(cores)
	return info
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func armImplementer(code string) string {
	switch strings.ToLower(code) {
	case "0x41":
		return "ARM"
	case "0x4e":
		return "NVIDIA"
	case "0x61":
		return "Apple"
	case "0xc0":
		return "Ampere"
	}
	return "arm implementer " + code
}

// ParseMemTotal reads MemTotal from /proc/meminfo, in bytes.
func ParseMemTotal(data []byte) (uint64, error) {
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo MemTotal: %w", err)
		}
		if len(f) > 1 && f[1] != "kB" {
			return 0, fmt.Errorf("meminfo MemTotal: unit %q", f[1])
		}
		if kb > 1<<53 {
			return 0, fmt.Errorf("meminfo MemTotal: %d kB is not plausible", kb)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("meminfo: no MemTotal")
}

// ParseCPUList reads a kernel CPU or node list such as "0-3,8,10-11".
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad entry %q", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		if b-a > 1<<16 || len(out) > 1<<16 {
			return nil, fmt.Errorf("cpu list %q: too many entries", s)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
