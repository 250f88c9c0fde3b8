// Package machine holds fixed machine descriptions: what a node's /proc,
// /sys and cpuid say, written down, so that a test decides whether a node
// passes a hardware check, not the machine the test runs on. hwprobe's
// test build plays one of them when HWPROBE_MACHINE names it; release
// builds never read it.
package machine

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
)

// EnvVar names the description hwprobe's test build plays.
const EnvVar = "HWPROBE_MACHINE"

// Names of the built-in descriptions.
const (
	// Zen5 is a 2-vCPU AMD EPYC Zen 5 guest (c8a.large's shape): AVX-512
	// with bf16 and VNNI, no AMX.
	Zen5 = "zen5"
	// SapphireRapids is a 2-vCPU Intel Xeon Sapphire Rapids guest
	// (c7i.large's shape): AVX-512, AVX512-FP16, AMX tile, bf16 and int8.
	SapphireRapids = "sapphirerapids"
)

// Description is one machine: enough of /proc, /sys and cpuid for
// hwprobe's CPU and network collectors.
type Description struct {
	Name     string
	Vendor   string // cpuid vendor string, as /proc/cpuinfo's vendor_id
	Model    string // brand string, as /proc/cpuinfo's model name
	Family   int
	CPUModel int
	// Sockets, CoresPerSocket and ThreadsPerCore give the topology.
	Sockets, CoresPerSocket, ThreadsPerCore int
	MemTotalKiB                             uint64
	// Flags are /proc/cpuinfo's flags; the tracked ones are also what
	// cpuid reports (a guest whose kernel and CPU agree).
	Flags []string
}

var x86Base = []string{"fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce", "cx8", "apic", "sep", "mtrr", "pge", "mca", "cmov",
	"pat", "pse36", "clflush", "mmx", "fxsr", "sse", "sse2", "ht", "syscall", "nx", "pdpe1gb", "rdtscp", "lm", "constant_tsc",
	"rep_good", "nopl", "nonstop_tsc", "cpuid", "pni", "pclmulqdq", "ssse3", "fma", "cx16", "pcid", "sse4_1", "sse4_2",
	"x2apic", "movbe", "popcnt", "aes", "xsave", "avx", "f16c", "rdrand", "hypervisor", "lahf_lm", "abm", "3dnowprefetch",
	"fsgsbase", "bmi1", "avx2", "smep", "bmi2", "erms", "invpcid", "rdseed", "adx", "smap", "clflushopt", "clwb",
	"sha_ni", "xsaveopt", "xsavec", "xgetbv1", "xsaves", "avx512f", "avx512dq", "avx512ifma", "avx512cd", "avx512bw",
	"avx512vl", "avx512vbmi", "umip", "pku", "ospke", "avx512_vbmi2", "gfni", "vaes", "vpclmulqdq", "avx512_vnni",
	"avx512_bitalg", "avx512_vpopcntdq", "rdpid", "fsrm", "avx512_bf16", "avx_vnni"}

// Builtin returns the description named name.
func Builtin(name string) (Description, error) {
	switch name {
	case Zen5:
		return Description{Name: Zen5, Vendor: "AuthenticAMD", Model: "AMD EPYC 9R45", Family: 26, CPUModel: 2,
			Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 2, MemTotalKiB: 3_923_000,
			Flags: append(slices.Clone(x86Base), "svm", "cr8_legacy", "sse4a", "misalignsse", "topoext", "perfctr_core", "movdiri", "movdir64b", "avx512_vp2intersect")}, nil
	case SapphireRapids:
		return Description{Name: SapphireRapids, Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8488C", Family: 6, CPUModel: 143,
			Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 2, MemTotalKiB: 3_926_000,
			Flags: append(slices.Clone(x86Base), "tsc_known_freq", "ibrs_enhanced", "waitpkg", "cldemote", "movdiri", "movdir64b",
				"serialize", "tsxldtrk", "amx_bf16", "avx512_fp16", "amx_tile", "amx_int8", "arch_capabilities")}, nil
	}
	return Description{}, fmt.Errorf("unknown machine %q: want %s or %s", name, Zen5, SapphireRapids)
}

// Threads is the number of logical CPUs.
func (d Description) Threads() int { return d.Sockets * d.CoresPerSocket * d.ThreadsPerCore }

// FS renders the description's /proc and /sys as a file system rooted
// where hwprobe's collectors expect "/" (paths "proc/cpuinfo", ...).
func (d Description) FS() fs.FS {
	var cpuinfo strings.Builder
	flags := strings.Join(d.Flags, " ")
	m := fstest.MapFS{}
	cpu := 0
	for s := range d.Sockets {
		for c := range d.CoresPerSocket {
			for range d.ThreadsPerCore {
				fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\nmodel name\t: %s\n"+
					"physical id\t: %d\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\nflags\t\t: %s\n\n",
					cpu, d.Vendor, d.Family, d.CPUModel, d.Model, s, d.CoresPerSocket*d.ThreadsPerCore, c, d.CoresPerSocket, flags)
				dir := "sys/devices/system/cpu/cpu" + strconv.Itoa(cpu) + "/topology/"
				m[dir+"physical_package_id"] = &fstest.MapFile{Data: []byte(strconv.Itoa(s) + "\n")}
				m[dir+"core_id"] = &fstest.MapFile{Data: []byte(strconv.Itoa(c) + "\n")}
				cpu++
			}
		}
	}
	m["proc/cpuinfo"] = &fstest.MapFile{Data: []byte(cpuinfo.String())}
	m["proc/meminfo"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\n", d.MemTotalKiB, d.MemTotalKiB/2))}
	m["sys/devices/system/cpu/online"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("0-%d\n", cpu-1))}
	m["sys/devices/system/node/online"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("0-%d\n", d.Sockets-1))}
	return m
}

// CPUID is what cpuid reports on the described machine: its vendor,
// brand, topology and the tracked features among its flags.
func (d Description) CPUID() *cpuid.CPUInfo {
	id := &cpuid.CPUInfo{BrandName: d.Model, VendorString: d.Vendor, Family: d.Family, Model: d.CPUModel,
		PhysicalCores: d.Sockets * d.CoresPerSocket, ThreadsPerCore: d.ThreadsPerCore, LogicalCores: d.Threads(),
		HypervisorVendorID: cpuid.KVM, HypervisorVendorString: "KVMKVMKVM"}
	switch d.Vendor {
	case "GenuineIntel":
		id.VendorID = cpuid.Intel
	case "AuthenticAMD":
		id.VendorID = cpuid.AMD
	}
	for _, f := range d.Flags {
		if fid, ok := probe.TrackedFeature(f); ok {
			id.Enable(fid)
		}
	}
	return id
}
