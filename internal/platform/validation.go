package platform

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// The validation gate: a cluster's or footprint's `validation` block makes
// apply wait until every node has run hwprobe against the profile rendered
// from the declaration and published a passing report.

// On-failure actions of the validation gate.
const (
	OnFailureFail    = "fail"    // apply fails naming node, check, expected and actual
	OnFailureWarn    = "warn"    // apply succeeds with a warning
	OnFailureReplace = "replace" // the node is terminated and relaunched at its index
)

// OnFailureActions lists the on_failure values, default first.
func OnFailureActions() []string { return []string{OnFailureFail, OnFailureWarn, OnFailureReplace} }

// Validation levels.
const (
	// ValidationQuick checks the inventory and runs the declared benchmarks.
	ValidationQuick = "quick"
	// ValidationFull also runs the type's standard benchmarks (GEMM and
	// memory bandwidth, NCCL all-reduce on multi-GPU nodes) against a
	// fraction of the catalog peak.
	ValidationFull = "full"
)

// ValidationLevels lists the level values, default first.
func ValidationLevels() []string { return []string{ValidationQuick, ValidationFull} }

// Profile sections a validation checks; by default all that the
// declaration gives.
const (
	CheckHost        = "host"         // region, zone, instance type, identity
	CheckCPU         = "cpu"          // vCPUs and memory
	CheckCPUFeatures = "cpu_features" // ISA features
	CheckGPU         = "gpu"          // model, count, memory, NVLink links
	CheckEFA         = "efa"          // EFA interfaces
)

// ValidationChecks lists the sections a profile may hold, in profile order.
func ValidationChecks() []string {
	return []string{CheckHost, CheckCPU, CheckCPUFeatures, CheckGPU, CheckEFA}
}

// Defaults of the validation block.
const (
	DefaultValidationWait            = true
	DefaultValidationTimeout         = 20 * time.Minute
	DefaultValidationMaxReplacements = 2
	// MaxValidationTimeout bounds timeout: a gate that waits longer is a
	// typo or a node that will never report.
	MaxValidationTimeout = 6 * time.Hour
	// MaxValidationReplacements bounds max_replacements.
	MaxValidationReplacements = 16
	// DefaultHwprobePath is where the bootstrap looks for hwprobe when no
	// artifact location is given: the image carries it.
	DefaultHwprobePath = "/usr/local/bin/hwprobe"
	// memoryHeadroom is the share of an instance's nominal memory its
	// operating system sees at least (the firmware and kernel keep the
	// rest).
	memoryHeadroom = 0.9
	// gpuMemoryHeadroom is the share of a GPU's nominal memory NVML
	// reports at least (an H200 sold as 141 GB reports 140.4 GiB).
	gpuMemoryHeadroom = 0.95
	// nvlinkLinkGBps is one NVLink 3 or 4 link's bandwidth per direction.
	nvlinkLinkGBps = 25
)

// BenchmarkThreshold is one benchmark of the validation block with its
// thresholds: absolute (Min, Max, in the benchmark's unit) or a fraction
// of the catalog peak (MinEfficiency, 0..1).
type BenchmarkThreshold struct {
	Name          string
	Min           *float64
	Max           *float64
	MinEfficiency *float64
	Optional      bool
	// Backend is the kernel the figure must come from; set only by the
	// defaults a footprint's required features add (featureBenchmarks).
	Backend string
}

// ValidationSpec is a `validation` block as declared. Zero values take the
// defaults (Defaults fills them in).
type ValidationSpec struct {
	// Wait makes apply wait for the reports; false renders and bootstraps
	// the profile but does not gate.
	Wait            bool
	Timeout         time.Duration // 0: DefaultValidationTimeout
	OnFailure       string        // "": fail
	MaxReplacements *int          // nil: DefaultValidationMaxReplacements
	Level           string        // "": quick
	// Checks are the profile sections to check; nil means all.
	Checks     []string
	Benchmarks []BenchmarkThreshold
	// ReportsS3URI is the in-region prefix (s3://bucket/prefix/) the nodes
	// publish to; each cluster writes under NAME/ below it.
	ReportsS3URI string
	// ReportsKMSKeyARN encrypts the reports (SSE-KMS).
	ReportsKMSKeyARN string
	// HwprobeS3URI is the hwprobe binary in the region; empty: the image
	// carries it at DefaultHwprobePath. HwprobeSHA256 is its checksum.
	HwprobeS3URI  string
	HwprobeSHA256 string
	// TrustedCertificates (PEM) verify the nodes' identity documents; empty
	// takes the provider's.
	TrustedCertificates string
	// Attestation is AttestationAuto (""), AttestationNitroTPM or
	// AttestationNone: whether the gate requires each report to come with
	// a NitroTPM attestation document (validation_attestation.go).
	Attestation string
	// AttestationRoots (PEM) are the roots attestation documents must
	// chain to; empty: AWS's Nitro root, embedded.
	AttestationRoots string
	// AttestationPCRs are NitroTPM PCR values (SHA-384, hex) an attested
	// report's document must carry, by PCR index ("0" to "31"): the
	// measurements of an attestable image.
	AttestationPCRs map[string]string
}

// WithDefaults returns v with every unset value at its default.
func (v ValidationSpec) WithDefaults() ValidationSpec {
	if v.Timeout == 0 {
		v.Timeout = DefaultValidationTimeout
	}
	if v.OnFailure == "" {
		v.OnFailure = OnFailureFail
	}
	if v.MaxReplacements == nil {
		n := DefaultValidationMaxReplacements
		v.MaxReplacements = &n
	}
	if v.Level == "" {
		v.Level = ValidationQuick
	}
	if v.Checks == nil {
		v.Checks = ValidationChecks()
	}
	return v
}

// ParseValidationTimeout reads a timeout such as "20m", "1h30m" or "90s":
// a Go duration of at least a minute and at most MaxValidationTimeout.
func ParseValidationTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration: use a duration such as \"20m\"")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: use a number and a unit, such as \"20m\" or \"1h30m\"", s)
	}
	if d < time.Minute || d > MaxValidationTimeout {
		return 0, fmt.Errorf("%q is out of range: use 1m to %s", s, MaxValidationTimeout)
	}
	return d, nil
}

var sha256RE = lazyRegexp(`^[0-9a-f]{64}$`)

// Validate checks the block with its attribute paths under prefix
// ("validation"): values, ranges, benchmark names and thresholds, the S3
// URIs' form. known reports whether an attribute path's value is known.
func (v ValidationSpec) Validate(prefix string, known func(string) bool) []Problem {
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: prefix + "." + path, Summary: summary, Detail: detail})
	}
	k := func(path string) bool { return known == nil || known(prefix+"."+path) }
	if v.OnFailure != "" && k("on_failure") && !slices.Contains(OnFailureActions(), v.OnFailure) {
		add("on_failure", "Unknown on_failure action", fmt.Sprintf("%q: use %s.", v.OnFailure, strings.Join(OnFailureActions(), ", ")))
	}
	if v.Level != "" && k("level") && !slices.Contains(ValidationLevels(), v.Level) {
		add("level", "Unknown validation level", fmt.Sprintf("%q: use %s.", v.Level, strings.Join(ValidationLevels(), " or ")))
	}
	if v.Timeout != 0 && (v.Timeout < time.Minute || v.Timeout > MaxValidationTimeout) {
		add("timeout", "Validation timeout out of range", fmt.Sprintf("%s: use 1m to %s.", v.Timeout, MaxValidationTimeout))
	}
	if m := v.MaxReplacements; m != nil && (*m < 0 || *m > MaxValidationReplacements) {
		add("max_replacements", "max_replacements out of range", fmt.Sprintf("%d: use 0 to %d.", *m, MaxValidationReplacements))
	}
	if k("checks") {
		seen := map[string]bool{}
		for i, c := range v.Checks {
			switch {
			case !slices.Contains(ValidationChecks(), c):
				add(fmt.Sprintf("checks[%d]", i), "Unknown check", fmt.Sprintf("%q: use %s.", c, strings.Join(ValidationChecks(), ", ")))
			case seen[c]:
				add(fmt.Sprintf("checks[%d]", i), "Duplicate check", fmt.Sprintf("%q is listed twice.", c))
			}
			seen[c] = true
		}
	}
	names := map[string]bool{}
	for i, b := range v.Benchmarks {
		path := fmt.Sprintf("benchmarks[%d]", i)
		if !k(path + ".name") {
			continue
		}
		switch {
		case !slices.Contains(profile.BenchmarkNames(), b.Name):
			add(path+".name", "Unknown benchmark", fmt.Sprintf("%q: hwprobe runs %s.", b.Name, strings.Join(profile.BenchmarkNames(), ", ")))
		case names[b.Name]:
			add(path+".name", "Duplicate benchmark", fmt.Sprintf("%q is listed twice: give each benchmark once, with all its thresholds.", b.Name))
		}
		names[b.Name] = true
		if b.Min == nil && b.Max == nil && b.MinEfficiency == nil {
			add(path, "Benchmark without a threshold", fmt.Sprintf("%s: set min or max (in the benchmark's unit) or min_efficiency (a fraction of the peak).", b.Name))
		}
		if e := b.MinEfficiency; e != nil && (*e <= 0 || *e > 1 || math.IsNaN(*e)) {
			add(path+".min_efficiency", "Efficiency out of range", fmt.Sprintf("%g: min_efficiency is a fraction of the catalog peak, above 0 and at most 1 (0.6 for 60%%).", *e))
		}
		if b.Min != nil && b.Max != nil && *b.Min > *b.Max {
			add(path+".max", "max below min", fmt.Sprintf("%s: max %g is below min %g.", b.Name, *b.Max, *b.Min))
		}
	}
	if k("reports_s3_uri") {
		if v.ReportsS3URI == "" {
			add("reports_s3_uri", "Missing reports location", "Set reports_s3_uri to an in-region bucket prefix (s3://bucket/prefix/) the nodes may write to: the gate reads their reports there.")
		} else if _, _, err := profile.SplitS3URI(v.ReportsS3URI); err != nil {
			add("reports_s3_uri", "Invalid reports location", fmt.Sprintf("%v: use s3://bucket/prefix/.", err))
		}
	}
	if k("reports_kms_key_arn") && v.ReportsKMSKeyARN == "" {
		add("reports_kms_key_arn", "Missing reports key", "Set reports_kms_key_arn to a customer-managed KMS key of the region: reports are encrypted with it (SSE-KMS).")
	}
	if k("hwprobe_s3_uri") && v.HwprobeS3URI != "" {
		if _, _, err := profile.SplitS3URI(v.HwprobeS3URI); err != nil {
			add("hwprobe_s3_uri", "Invalid hwprobe location", fmt.Sprintf("%v: use s3://bucket/path/hwprobe.", err))
		}
		if k("hwprobe_sha256") && !sha256RE().MatchString(v.HwprobeSHA256) {
			add("hwprobe_sha256", "Missing or invalid hwprobe checksum", "hwprobe_s3_uri needs hwprobe_sha256: the binary's SHA-256 as 64 lowercase hex digits (sha256sum hwprobe), so a node runs only the binary you published.")
		}
	}
	if k("hwprobe_sha256") && v.HwprobeS3URI == "" && v.HwprobeSHA256 != "" && k("hwprobe_s3_uri") {
		add("hwprobe_sha256", "Checksum without a location", "hwprobe_sha256 checks the binary fetched from hwprobe_s3_uri: set hwprobe_s3_uri, or remove hwprobe_sha256 to use the hwprobe on the image.")
	}
	ps = append(ps, v.validateAttestation(prefix, k)...)
	if k("trusted_certificates") && v.TrustedCertificates != "" {
		if _, err := parseTrusted(v.TrustedCertificates); err != nil {
			add("trusted_certificates", "Invalid trusted certificates", fmt.Sprintf("%v: give one or more PEM CERTIFICATE blocks (AWS's RSA-2048 certificate for the region).", err))
		}
	}
	return ps
}

// ResidencyRefs are the locations of the block residency checks: the
// reports bucket and key, and the hwprobe artifact.
func (v ValidationSpec) ResidencyRefs(prefix string, known func(string) bool) []residency.Ref {
	k := func(path string) bool { return known == nil || known(prefix+"."+path) }
	var refs []residency.Ref
	if v.ReportsS3URI != "" && k("reports_s3_uri") {
		refs = append(refs, residency.Ref{Path: prefix + ".reports_s3_uri", Kind: residency.KindS3URI, Value: v.ReportsS3URI})
	}
	if v.ReportsKMSKeyARN != "" && k("reports_kms_key_arn") {
		refs = append(refs, residency.KeyRef(prefix+".reports_kms_key_arn", v.ReportsKMSKeyARN))
	}
	if v.HwprobeS3URI != "" && k("hwprobe_s3_uri") {
		refs = append(refs, residency.Ref{Path: prefix + ".hwprobe_s3_uri", Kind: residency.KindS3URI, Value: v.HwprobeS3URI})
	}
	return refs
}

// ReportsPrefix is where the nodes of resource name publish: NAME/ under
// the block's reports prefix, as s3://bucket/prefix/NAME/.
func (v ValidationSpec) ReportsPrefix(name string) string {
	return strings.TrimSuffix(v.ReportsS3URI, "/") + "/" + name + "/"
}

// NodeFacts are what the catalog knows of a node's instance type, the
// inputs of a profile.
type NodeFacts struct {
	InstanceType string
	VCPUs        int
	MemoryMiB    int
	CPUFeatures  []string
	GPUModel     string
	GPUCount     int
	GPUMemoryGiB int
	// NVLinkLinks per GPU; 0 without NVLink or when unknown.
	NVLinkLinks int
	// EFAInterfaces per node, as the cluster attaches them.
	EFAInterfaces int
	// PeakBF16TFLOPS per GPU, for the full level's defaults.
	PeakBF16TFLOPS float64
}

// NodeFactsFromCatalog reads a catalog type's facts. efa is the number of
// EFA interfaces the resource attaches (the plan's, not the type's
// maximum).
func NodeFactsFromCatalog(t catalog.InstanceType, efa int) NodeFacts {
	f := NodeFacts{InstanceType: t.Name, VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB, CPUFeatures: slices.Clone(t.CPU.Features), EFAInterfaces: efa}
	if g := t.GPU; g != nil {
		f.GPUModel, f.GPUCount, f.GPUMemoryGiB, f.PeakBF16TFLOPS = g.Model, g.Count, g.MemoryGiB, g.PeakBF16TFLOPS
		if g.Interconnect == "nvlink" {
			for _, p := range catalog.GPUPeaks() {
				if strings.EqualFold(p.EC2Model, g.Model) && p.NVLinkGBps > 0 {
					f.NVLinkLinks = int(p.NVLinkGBps / nvlinkLinkGBps)
					break
				}
			}
		}
	}
	return f
}

// ProfileTarget is where a profile's node runs and reports.
type ProfileTarget struct {
	Name    string   // the profile's name: the resource's
	Region  string   // the environment's region
	ZoneIDs []string // the zone ids the node may run in
	// ReportsPrefix and ReportsKMSKeyARN: where the node publishes.
	ReportsPrefix    string
	ReportsKMSKeyARN string
}

// ProfileForInstanceType renders the profile of a node of facts' type: the
// host (region, zones, type), the CPU (threads and memory; features), the
// GPUs and EFA when the type has them, and the validation block's
// benchmarks, each section only when v.Checks lists it.
func ProfileForInstanceType(v ValidationSpec, facts NodeFacts, t ProfileTarget) *profile.Profile {
	v = v.WithDefaults()
	on := func(c string) bool { return slices.Contains(v.Checks, c) }
	p := &profile.Profile{Version: profile.Version, Name: t.Name}
	if on(CheckHost) {
		// The gate verifies the identity document itself, against the
		// trusted certificates: the node need not have them.
		no := false
		p.Host = &profile.Host{Region: t.Region, ZoneIDs: slices.Sorted(slices.Values(t.ZoneIDs)), InstanceType: facts.InstanceType, RequireVerifiedIdentity: &no}
	}
	if on(CheckCPU) || on(CheckCPUFeatures) {
		c := &profile.CPU{}
		if on(CheckCPU) {
			c.MinThreads = facts.VCPUs
			c.MinMemoryGiB = math.Floor(float64(facts.MemoryMiB) / 1024 * memoryHeadroom)
		}
		if on(CheckCPUFeatures) {
			c.Features = slices.Clone(facts.CPUFeatures)
		}
		if c.MinThreads > 0 || c.MinMemoryGiB > 0 || len(c.Features) > 0 {
			p.CPU = c
		}
	}
	if on(CheckGPU) && facts.GPUCount > 0 {
		p.GPU = &profile.GPU{Model: facts.GPUModel, Count: facts.GPUCount, MinNVLinkLinks: facts.NVLinkLinks,
			MinMemoryGiB: math.Floor(float64(facts.GPUMemoryGiB) * gpuMemoryHeadroom)}
	}
	if on(CheckEFA) && facts.EFAInterfaces > 0 {
		p.EFA = &profile.EFA{Count: facts.EFAInterfaces}
	}
	for _, b := range levelBenchmarks(v, facts) {
		p.Benchmarks = append(p.Benchmarks, profile.Benchmark{Name: b.Name, Min: b.Min, Max: b.Max, MinEfficiency: b.MinEfficiency, Optional: b.Optional, Backend: b.Backend})
	}
	if t.ReportsPrefix != "" {
		p.Report = &profile.Report{S3URI: t.ReportsPrefix, KMSKeyID: t.ReportsKMSKeyARN}
	}
	return p
}

// levelBenchmarks are the declared benchmarks, and at the full level the
// type's standard ones not declared.
func levelBenchmarks(v ValidationSpec, f NodeFacts) []BenchmarkThreshold {
	out := slices.Clone(v.Benchmarks)
	if v.Level != ValidationFull {
		return out
	}
	eff := func(x float64) *float64 { return &x }
	std := []BenchmarkThreshold{{Name: "cpu_sgemm", MinEfficiency: eff(0.5)}, {Name: "cpu_stream_triad", MinEfficiency: eff(0.5)}}
	if f.GPUCount > 0 {
		std = append(std, BenchmarkThreshold{Name: "gpu_gemm_bf16", MinEfficiency: eff(0.6)}, BenchmarkThreshold{Name: "gpu_hbm_d2d", MinEfficiency: eff(0.7)})
		if f.GPUCount > 1 {
			std = append(std, BenchmarkThreshold{Name: "gpu_nccl_allreduce_busbw", MinEfficiency: eff(0.6)})
		}
	}
	for _, s := range std {
		if !slices.ContainsFunc(out, func(b BenchmarkThreshold) bool { return b.Name == s.Name }) {
			out = append(out, s)
		}
	}
	return out
}

// ProfileForGPUCluster renders the profile every node of a GPU cluster is
// validated against: what the catalog says of the instance type (GPU
// model, count and memory, NVLink links, vCPUs, memory, CPU features), the
// EFA interfaces the cluster attaches, the validation block's benchmarks,
// and the cluster's reports prefix.
func ProfileForGPUCluster(spec GPUClusterSpec, facts NodeFacts, region string, zoneIDs []string) *profile.Profile {
	v := ValidationSpec{}
	if spec.Validation != nil {
		v = *spec.Validation
	}
	return ProfileForInstanceType(v, facts, ProfileTarget{
		Name: spec.Name, Region: region, ZoneIDs: zoneIDs,
		ReportsPrefix: v.ReportsPrefix(spec.Name), ReportsKMSKeyARN: v.ReportsKMSKeyARN,
	})
}

// RenderProfile is the profile's HCL text, as nodes receive it.
func RenderProfile(p *profile.Profile) string { return string(profile.Render(p)) }
