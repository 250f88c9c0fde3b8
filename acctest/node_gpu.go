package acctest

import (
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
)

// GPU nodes: the node player's hwprobe is built with the hwprobe_nvmlmock
// tag, so a played node can have GPUs: go-nvml's mock server for its
// instance type, with the faults a test names (an NVLink down, a GPU
// missing). hwprobe then runs its real GPU checks against them. The mock
// is test code and says so on hwprobe's stderr; release builds of hwprobe
// do not contain it.

// HwprobeTestTags are the build tags of the node player's hwprobe.
const HwprobeTestTags = "hwprobe_nvmlmock"

// NVMLMockMachine is the go-nvml mock server that plays an instance
// type's GPUs: p4d (8x A100 40GB SXM4, 12 NVLink links each), p5 (8x H100
// 80GB SXM5, 18 links), p5e and p5en (8x H200 141GB, 18 links). Other
// types have none ("").
func NVMLMockMachine(instanceType string) string {
	family, _, _ := strings.Cut(instanceType, ".")
	switch family {
	case "p4d":
		return "dgxa100"
	case "p5":
		return "dgxh100"
	case "p5e", "p5en":
		return "dgxh200"
	}
	return ""
}

// GPUNode is a node whose GPUs are instanceType's mock server with faults
// (HWPROBE_NVML_MOCK fault settings, such as "nvlink_down=3:17").
func GPUNode(instanceType string, faults ...string) NodeBehaviour {
	m := NVMLMockMachine(instanceType)
	if m == "" {
		return NodeBehaviour{}
	}
	return NodeBehaviour{NVMLMock: strings.Join(append([]string{m}, faults...), ";")}
}

// nvmlMockEnv is the environment that gives hwprobe the mock GPUs.
func nvmlMockEnv(spec string) []string {
	if spec == "" {
		return nil
	}
	return []string{nvmlmock.EnvVar + "=" + spec}
}
