// Package nvmlmock is hwprobe's NVML backend for tests: go-nvml's mock
// servers (DGX A100, H100, H200) with faults set from a one-line spec, so
// acceptance tests can run the real hwprobe binary's GPU checks on a
// machine without a GPU. hwprobe uses it only when built with the
// hwprobe_nvmlmock tag and HWPROBE_NVML_MOCK is set; release builds do not
// contain it.
//
// The spec is a machine, then faults separated by semicolons:
//
//	dgxh200
//	dgxh200;nvlink_down=3:17
//	dgxa100;gpus=7;memory_mib=2:20480;xid=1:79;ecc_uncorrected=4:2;pcie_width=5:8
//
// nvlink_down=GPU:LINK takes NVLink LINK of GPU down; gpus=N keeps the
// first N GPUs; memory_mib=GPU:MiB sets a GPU's memory; xid=GPU:CODE
// delivers a critical XID event; ecc_uncorrected=GPU:N sets the
// uncorrected ECC counters; pcie_width=GPU:W degrades the PCIe link. Each
// fault takes a comma-separated list (nvlink_down=3:17,3:16).
package nvmlmock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EnvVar names the environment variable that holds the spec.
const EnvVar = "HWPROBE_NVML_MOCK"

// Machines lists the mock servers a spec may name.
func Machines() []string { return []string{"dgxa100", "dgxh100", "dgxh200"} }

// GPUCount is the GPUs every mock machine has.
const GPUCount = 8

// Fault values by GPU index.
type (
	// Link is one NVLink of one GPU.
	Link struct{ GPU, Link int }
	// Value is one number for one GPU.
	Value struct {
		GPU   int
		Value uint64
	}
)

// Spec is a parsed mock spec.
type Spec struct {
	Machine        string
	GPUs           int // GPUs kept; 0 keeps all
	NVLinkDown     []Link
	MemoryMiB      []Value
	XID            []Value
	ECCUncorrected []Value
	PCIeWidth      []Value
}

// Parse reads a spec. It is pure: the machine is built by New.
func Parse(s string) (Spec, error) {
	parts := strings.Split(strings.TrimSpace(s), ";")
	sp := Spec{Machine: strings.ToLower(strings.TrimSpace(parts[0]))}
	if !slices.Contains(Machines(), sp.Machine) {
		return Spec{}, fmt.Errorf("mock machine %q: use %s", parts[0], strings.Join(Machines(), ", "))
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		key, val, ok := strings.Cut(p, "=")
		if !ok {
			return Spec{}, fmt.Errorf("fault %q: want name=value", p)
		}
		key = strings.TrimSpace(key)
		if key == "gpus" {
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 0 || n > GPUCount {
				return Spec{}, fmt.Errorf("gpus=%s: want 0 to %d", val, GPUCount)
			}
			sp.GPUs = n
			if n == 0 {
				sp.GPUs = -1 // every GPU gone
			}
			continue
		}
		var dst *[]Value
		switch key {
		case "nvlink_down":
		case "memory_mib":
			dst = &sp.MemoryMiB
		case "xid":
			dst = &sp.XID
		case "ecc_uncorrected":
			dst = &sp.ECCUncorrected
		case "pcie_width":
			dst = &sp.PCIeWidth
		default:
			return Spec{}, fmt.Errorf("fault %q: use nvlink_down, gpus, memory_mib, xid, ecc_uncorrected or pcie_width", key)
		}
		for _, item := range strings.Split(val, ",") {
			g, v, err := pair(item)
			if err != nil {
				return Spec{}, fmt.Errorf("%s: %w", key, err)
			}
			if dst == nil {
				if v > 17 {
					return Spec{}, fmt.Errorf("nvlink_down: link %d: NVLink ids are 0 to 17", v)
				}
				sp.NVLinkDown = append(sp.NVLinkDown, Link{GPU: g, Link: int(v)})
				continue
			}
			*dst = append(*dst, Value{GPU: g, Value: v})
		}
	}
	return sp, nil
}

// pair reads "GPU:VALUE".
func pair(s string) (int, uint64, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want GPU:VALUE", s)
	}
	g, err := strconv.Atoi(a)
	if err != nil || g < 0 || g >= GPUCount {
		return 0, 0, fmt.Errorf("%q: GPU index 0 to %d", s, GPUCount-1)
	}
	v, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%q: value is not a whole number", s)
	}
	return g, v, nil
}

// String writes the spec back in the form Parse reads.
func (s Spec) String() string {
	parts := []string{s.Machine}
	if s.GPUs != 0 {
		parts = append(parts, fmt.Sprintf("gpus=%d", max(s.GPUs, 0)))
	}
	if len(s.NVLinkDown) > 0 {
		var l []string
		for _, d := range s.NVLinkDown {
			l = append(l, fmt.Sprintf("%d:%d", d.GPU, d.Link))
		}
		parts = append(parts, "nvlink_down="+strings.Join(l, ","))
	}
	for _, f := range []struct {
		name string
		vs   []Value
	}{{"memory_mib", s.MemoryMiB}, {"xid", s.XID}, {"ecc_uncorrected", s.ECCUncorrected}, {"pcie_width", s.PCIeWidth}} {
		if len(f.vs) == 0 {
			continue
		}
		var l []string
		for _, v := range f.vs {
			l = append(l, fmt.Sprintf("%d:%d", v.GPU, v.Value))
		}
		parts = append(parts, f.name+"="+strings.Join(l, ","))
	}
	return strings.Join(parts, ";")
}
