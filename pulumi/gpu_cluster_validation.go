package pulumi

import (
	"context"
	"fmt"
	"slices"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// GpuValidation is the validation gate of a GPU cluster (the Terraform
// resource's validation block).
type GpuValidation struct {
	Wait                *bool             `pulumi:"wait,optional"`
	Timeout             *string           `pulumi:"timeout,optional"`
	OnFailure           *string           `pulumi:"onFailure,optional"`
	MaxReplacements     *int              `pulumi:"maxReplacements,optional"`
	Level               *string           `pulumi:"level,optional"`
	Checks              []string          `pulumi:"checks,optional"`
	Benchmarks          []GpuBenchmark    `pulumi:"benchmarks,optional"`
	ReportsS3URI        *string           `pulumi:"reportsS3Uri,optional"`
	ReportsKMSKeyARN    *string           `pulumi:"reportsKmsKeyArn,optional"`
	HwprobeS3URI        *string           `pulumi:"hwprobeS3Uri,optional"`
	HwprobeSHA256       *string           `pulumi:"hwprobeSha256,optional"`
	TrustedCertificates *string           `pulumi:"trustedCertificates,optional"`
	Attestation         *string           `pulumi:"attestation,optional"`
	AttestationRoots    *string           `pulumi:"attestationRoots,optional"`
	AttestationPCRs     map[string]string `pulumi:"attestationPcrs,optional"`
}

// GpuBenchmark is one benchmark of the validation gate with its
// thresholds.
type GpuBenchmark struct {
	Name          string   `pulumi:"name"`
	Min           *float64 `pulumi:"min,optional"`
	Max           *float64 `pulumi:"max,optional"`
	MinEfficiency *float64 `pulumi:"minEfficiency,optional"`
	Optional      *bool    `pulumi:"optional,optional"`
}

// GpuValidationResult is what the gate found for one node.
type GpuValidationResult struct {
	Index          int      `pulumi:"index"`
	InstanceID     string   `pulumi:"instanceId"`
	Status         string   `pulumi:"status"`
	Summary        string   `pulumi:"summary"`
	Failures       []string `pulumi:"failures"`
	AttestedRegion string   `pulumi:"attestedRegion"`
	AttestedZoneID string   `pulumi:"attestedZoneId"`
	ReportKey      string   `pulumi:"reportKey"`
	GeneratedAt    string   `pulumi:"generatedAt"`
}

// Annotate describes the validation gate.
func (v *GpuValidation) Annotate(a infer.Annotator) {
	a.Describe(&v.Wait, "Wait for every node's hwprobe report before the update succeeds. Default `true`.")
	a.Describe(&v.Timeout, fmt.Sprintf("How long to wait for the reports, e.g. `20m` (default %s).", platform.DefaultValidationTimeout))
	a.Describe(&v.OnFailure, "`fail` (default), `warn` or `replace` (relaunch a failing node at its index, up to `maxReplacements`).")
	a.Describe(&v.MaxReplacements, fmt.Sprintf("Nodes `replace` may relaunch in one update. Default %d.", platform.DefaultValidationMaxReplacements))
	a.Describe(&v.Level, "`quick` (default) or `full` (adds GEMM, memory bandwidth and NCCL against a fraction of the catalog peak).")
	a.Describe(&v.Checks, "Profile sections to check: `host`, `cpu`, `cpu_features`, `gpu`, `efa`. Default: all.")
	a.Describe(&v.Benchmarks, "Benchmarks with thresholds: absolute (`min`, `max`) or `minEfficiency`, a fraction of the catalog peak.")
	a.Describe(&v.ReportsS3URI, "In-region S3 prefix the nodes publish their reports to; each cluster writes under `<name>/`.")
	a.Describe(&v.ReportsKMSKeyARN, "KMS key the reports are encrypted with, inside the jurisdiction.")
	a.Describe(&v.HwprobeS3URI, "In-region S3 location of the hwprobe binary. Default: hwprobe on the image at `/usr/local/bin/hwprobe`.")
	a.Describe(&v.HwprobeSHA256, "SHA-256 of the binary at `hwprobeS3Uri`.")
	a.Describe(&v.TrustedCertificates, "PEM certificates that verify the nodes' signed identity documents (AWS's RSA-2048 certificate for the region). Unset: the AWS certificate embedded for the provider's region (us-east-1, us-west-2, eu-central-1; none for me-central-1, where this must be set).")
	a.Describe(&v.Attestation, "Whether each report must be attested by the node's NitroTPM (every update's gate issues a challenge, the instance tag `"+platform.ChallengeTag+"`, each report must answer). "+
		"`auto` (default): required when the image supports NitroTPM, else the preview warns that the evidence is not hardware-attested; `nitrotpm`: required, an image without NitroTPM fails the preview; `none`: not required (a warning).")
	a.Describe(&v.AttestationPCRs, "NitroTPM PCR values every attested report's document must carry, by PCR index (`\"0\"` to `\"31\"`), each a SHA-384 value in 96 hex digits: the measurements of an attestable image. Unset: PCRs are not checked.")
	a.Describe(&v.AttestationRoots, "PEM root certificates attestation documents must chain to. Unset: the AWS Nitro root certificate embedded in the provider.")
}

// validationSpec translates the block; nil without one.
func (v *GpuValidation) validationSpec(s *platform.GPUClusterSpec) *platform.ValidationSpec {
	if v == nil {
		return nil
	}
	out := &platform.ValidationSpec{Wait: platform.DefaultValidationWait, OnFailure: deref(v.OnFailure), MaxReplacements: v.MaxReplacements,
		Level: deref(v.Level), Checks: v.Checks, ReportsS3URI: deref(v.ReportsS3URI), ReportsKMSKeyARN: deref(v.ReportsKMSKeyARN),
		HwprobeS3URI: deref(v.HwprobeS3URI), HwprobeSHA256: deref(v.HwprobeSHA256), TrustedCertificates: deref(v.TrustedCertificates),
		Attestation: deref(v.Attestation), AttestationRoots: deref(v.AttestationRoots), AttestationPCRs: v.AttestationPCRs}
	if v.Wait != nil {
		out.Wait = *v.Wait
	}
	if t := deref(v.Timeout); t != "" {
		d, err := platform.ParseValidationTimeout(t)
		if err != nil {
			s.InputProblems = append(s.InputProblems, platform.Problem{Path: "validation.timeout", Summary: "Invalid validation timeout", Detail: err.Error()})
		}
		out.Timeout = d
	}
	for _, b := range v.Benchmarks {
		out.Benchmarks = append(out.Benchmarks, platform.BenchmarkThreshold{Name: b.Name, Min: b.Min, Max: b.Max, MinEfficiency: b.MinEfficiency, Optional: deref(b.Optional)})
	}
	return out
}

// validationOutputs are the gate's outputs of a cluster.
func validationOutputs(c *platform.GPUCluster) (profile *string, results []GpuValidationResult) {
	if c.ValidationProfile != "" {
		profile = &c.ValidationProfile
	}
	for _, v := range c.Validation {
		gen := ""
		if !v.GeneratedAt.IsZero() {
			gen = v.GeneratedAt.UTC().Format(time.RFC3339)
		}
		failures := v.Failures
		if failures == nil {
			failures = []string{}
		}
		results = append(results, GpuValidationResult{Index: v.Index, InstanceID: v.InstanceID, Status: v.Status, Summary: v.Summary, Failures: failures,
			AttestedRegion: v.AttestedRegion, AttestedZoneID: v.AttestedZoneID, ReportKey: v.ReportKey, GeneratedAt: gen})
	}
	return profile, results
}

// warnValidation logs a warn result.
func warnValidation(ctx context.Context, c *platform.GPUCluster) {
	if c != nil && c.ValidationWarning != "" {
		p.GetLogger(ctx).Warning(c.ValidationWarning)
	}
}

// markDrained records in the validation results the nodes hwprobe's health
// check drained in Slurm since the gate passed them (a refresh): status
// drained, the drain's reason as summary, its time as generatedAt.
func markDrained(results []GpuValidationResult, drained []platform.HwprobeDrained) []GpuValidationResult {
	if len(drained) == 0 || len(results) == 0 {
		return results
	}
	out := slices.Clone(results)
	for i, r := range out {
		for _, d := range drained {
			if r.InstanceID == d.InstanceID {
				out[i].Status, out[i].Summary, out[i].GeneratedAt = platform.NodeDrained, d.Reason, d.At.UTC().Format(time.RFC3339)
			}
		}
	}
	return out
}
