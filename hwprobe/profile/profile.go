// Package profile is the hardware profile hwprobe validates a node against:
// its HCL schema, a loader that reports problems as HCL diagnostics (file,
// line and column), and a renderer that writes a Profile back to HCL text.
//
// The package is pure: it reads no files and calls no services, so the
// provider can import it to render the profiles it hands to nodes.
//
// A profile looks like this:
//
//	host {
//	  region        = "me-central-1"
//	  zone_ids      = ["mec1-az1", "mec1-az3"]
//	  instance_type = "p5en.48xlarge"
//	}
//	cpu {
//	  min_cores      = 96
//	  min_memory_gib = 1900
//	  features       = ["avx512f", "amx_tile"]
//	}
//	gpu {
//	  model             = "H200"
//	  count             = 8
//	  min_memory_gib    = 140
//	  min_nvlink_links  = 18
//	  mig_enabled       = false
//	  ecc_enabled       = true
//	  min_pcie_gen      = 5
//	  min_pcie_width    = 16
//	}
//	efa {
//	  count = 16
//	}
//	benchmark "gpu_gemm_bf16" {
//	  min_efficiency = 0.6
//	}
//	report {
//	  s3_uri     = "s3://my-reports/hwprobe/"
//	  kms_key_id = "arn:aws:kms:me-central-1:111122223333:key/..."
//	}
package profile

import "strings"

// Version is the profile schema version this package reads and writes.
const Version = 1

// Profile is what a node is declared to be. A nil block means the profile
// makes no claim about that part of the node, and no check is made for it.
type Profile struct {
	// Version of the schema; 0 is read as Version.
	Version int `hcl:"version,optional"`
	// Name is free text that identifies the profile in reports.
	Name string `hcl:"name,optional"`
	// OptionalChecks lists check ids (for example "gpu.xid" or
	// "host.identity_verified") that may be reported as not run without
	// failing validation. A check that ran and failed still fails.
	OptionalChecks []string `hcl:"optional_checks,optional"`

	Host       *Host       `hcl:"host,block"`
	CPU        *CPU        `hcl:"cpu,block"`
	GPU        *GPU        `hcl:"gpu,block"`
	EFA        *EFA        `hcl:"efa,block"`
	Benchmarks []Benchmark `hcl:"benchmark,block"`
	Report     *Report     `hcl:"report,block"`
}

// Host is the expected EC2 placement and type.
type Host struct {
	Region       string   `hcl:"region,optional"`
	ZoneIDs      []string `hcl:"zone_ids,optional"` // allowed zone ids, e.g. mec1-az1
	InstanceType string   `hcl:"instance_type,optional"`
	// RequireVerifiedIdentity makes an identity document whose signature
	// could not be verified a failure (default true when host is declared).
	RequireVerifiedIdentity *bool `hcl:"require_verified_identity,optional"`
}

// CPU is the expected processor and memory.
type CPU struct {
	Vendor       string   `hcl:"vendor,optional"` // "GenuineIntel", "AuthenticAMD", "ARM"...
	MinCores     int      `hcl:"min_cores,optional"`
	MinThreads   int      `hcl:"min_threads,optional"`
	MinMemoryGiB float64  `hcl:"min_memory_gib,optional"`
	Features     []string `hcl:"features,optional"` // ISA features, /proc/cpuinfo names: avx512f, amx_tile, sve...
}

// GPU is the expected set of NVIDIA GPUs.
type GPU struct {
	// Model is matched case-insensitively as a substring of the NVML name
	// ("H100" matches "NVIDIA H100 80GB HBM3").
	Model        string  `hcl:"model,optional"`
	Count        int     `hcl:"count"`
	MinMemoryGiB float64 `hcl:"min_memory_gib,optional"`
	// MinNVLinkLinks is the number of active NVLink links each GPU must have.
	MinNVLinkLinks int   `hcl:"min_nvlink_links,optional"`
	MIGEnabled     *bool `hcl:"mig_enabled,optional"` // nil: not checked
	ECCEnabled     *bool `hcl:"ecc_enabled,optional"` // nil: not checked
	// MaxUncorrectedErrors bounds volatile and aggregate uncorrected ECC
	// errors, pending and failed row remaps and double-bit retired pages.
	// Nil means zero.
	MaxUncorrectedErrors *int `hcl:"max_uncorrected_errors,optional"`
	MinPCIeGen           int  `hcl:"min_pcie_gen,optional"`
	MinPCIeWidth         int  `hcl:"min_pcie_width,optional"`
	MaxTemperatureC      int  `hcl:"max_temperature_c,optional"`
	// XIDSeconds, when above zero, listens for XID events for that long
	// during the probe; any critical XID fails validation.
	XIDSeconds int `hcl:"xid_seconds,optional"`
}

// EFA is the expected Elastic Fabric Adapter and InfiniBand inventory.
type EFA struct {
	Count         int `hcl:"count,optional"`            // EFA devices
	MinActivePort int `hcl:"min_active_ports,optional"` // ports in ACTIVE state across EFA devices
	InfiniBand    int `hcl:"infiniband_count,optional"` // non-EFA InfiniBand devices
}

// Benchmark is one benchmark to run, with its thresholds. Each set threshold
// becomes one check.
type Benchmark struct {
	Name string `hcl:"name,label"`
	// Min is the lowest acceptable value, in the benchmark's unit.
	Min *float64 `hcl:"min,optional"`
	// MinEfficiency is the lowest acceptable fraction of the peak (0..1).
	MinEfficiency *float64 `hcl:"min_efficiency,optional"`
	// Max is the highest acceptable value, for latencies.
	Max *float64 `hcl:"max,optional"`
	// Optional lets the benchmark be not run without failing validation.
	Optional bool `hcl:"optional,optional"`
	// Backend, when set, is the kernel the figure must come from (the
	// result's backend, e.g. "builtin-amx-bf16"): a node whose figure came
	// from another kernel fails, as one bought for AMX whose kernel
	// refuses the tile state, and whose AVX-512 figure would otherwise
	// pass.
	Backend string `hcl:"backend,optional"`
}

// The backends of hwprobe's CPU GEMM kernels that a footprint's profile
// requires for the features it was bought for (Benchmark.Backend): the
// names the kernels report, one definition for both.
const (
	BackendAMXBF16    = "builtin-amx-bf16"
	BackendAMXInt8    = "builtin-amx-int8"
	BackendAVX512BF16 = "builtin-avx512-bf16"
	BackendAVX512VNNI = "builtin-avx512-vnni"
)

// Report is where `hwprobe report publish` writes the report.
type Report struct {
	S3URI    string `hcl:"s3_uri"`
	KMSKeyID string `hcl:"kms_key_id,optional"`
}

// IsOptional reports whether the check id is listed in OptionalChecks,
// exactly or under a prefix entry ending in ".*" ("host.*" covers
// "host.region").
func (p *Profile) IsOptional(id string) bool {
	for _, o := range p.OptionalChecks {
		if o == id {
			return true
		}
		if prefix, ok := strings.CutSuffix(o, "*"); ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(id, prefix) {
			return true
		}
	}
	return false
}

// Region is the region the profile declares, or "".
func (p *Profile) Region() string {
	if p.Host == nil {
		return ""
	}
	return p.Host.Region
}

// BenchmarkNames are the benchmarks hwprobe bench runs and a profile may
// name, in the order they run.
func BenchmarkNames() []string {
	return []string{
		"cpu_sgemm", "cpu_sgemm_blas", "cpu_bf16_gemm", "cpu_int8_gemm",
		"cpu_stream_copy", "cpu_stream_scale", "cpu_stream_add", "cpu_stream_triad",
		"cpu_mlp_train", "cpu_mlp_infer_p50", "cpu_mlp_infer_p90", "cpu_mlp_infer_p99", "cpu_mlp_infer_throughput",
		"cpu_mlp_int8_infer_p50", "cpu_mlp_int8_infer_p90", "cpu_mlp_int8_infer_p99", "cpu_mlp_int8_infer_throughput",
		"gpu_gemm_bf16", "gpu_gemm_fp16", "gpu_gemm_fp8",
		"gpu_hbm_d2d", "gpu_h2d", "gpu_d2h", "gpu_nvlink_p2p", "gpu_nccl_allreduce_busbw",
		"gpu_mlp_train", "gpu_mlp_infer_p50", "gpu_mlp_infer_p90", "gpu_mlp_infer_p99", "gpu_mlp_infer_throughput",
	}
}
