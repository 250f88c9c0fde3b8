package provider

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The GPU cluster's validation block and its computed attributes.

type gpuValidationModel struct {
	Wait                types.Bool   `tfsdk:"wait"`
	Timeout             types.String `tfsdk:"timeout"`
	OnFailure           types.String `tfsdk:"on_failure"`
	MaxReplacements     types.Int64  `tfsdk:"max_replacements"`
	Level               types.String `tfsdk:"level"`
	Checks              types.List   `tfsdk:"checks"`
	Benchmarks          types.List   `tfsdk:"benchmarks"`
	ReportsS3URI        types.String `tfsdk:"reports_s3_uri"`
	ReportsKMSKeyARN    types.String `tfsdk:"reports_kms_key_arn"`
	HwprobeS3URI        types.String `tfsdk:"hwprobe_s3_uri"`
	HwprobeSHA256       types.String `tfsdk:"hwprobe_sha256"`
	TrustedCertificates types.String `tfsdk:"trusted_certificates"`
	Attestation         types.String `tfsdk:"attestation"`
	AttestationRoots    types.String `tfsdk:"attestation_roots"`
	AttestationPCRs     types.Map    `tfsdk:"attestation_pcrs"`
}

type gpuBenchmarkModel struct {
	Name          types.String  `tfsdk:"name"`
	Min           types.Float64 `tfsdk:"min"`
	Max           types.Float64 `tfsdk:"max"`
	MinEfficiency types.Float64 `tfsdk:"min_efficiency"`
	Optional      types.Bool    `tfsdk:"optional"`
}

var (
	gpuBenchmarkType  = types.ObjectType{AttrTypes: map[string]attr.Type{"name": types.StringType, "min": types.Float64Type, "max": types.Float64Type, "min_efficiency": types.Float64Type, "optional": types.BoolType}}
	gpuValidationType = map[string]attr.Type{
		"wait": types.BoolType, "timeout": types.StringType, "on_failure": types.StringType, "max_replacements": types.Int64Type,
		"level": types.StringType, "checks": types.ListType{ElemType: types.StringType}, "benchmarks": types.ListType{ElemType: gpuBenchmarkType},
		"reports_s3_uri": types.StringType, "reports_kms_key_arn": types.StringType, "hwprobe_s3_uri": types.StringType,
		"hwprobe_sha256": types.StringType, "trusted_certificates": types.StringType,
		"attestation": types.StringType, "attestation_roots": types.StringType, "attestation_pcrs": types.MapType{ElemType: types.StringType},
	}
	gpuValidationResultType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"index": types.Int64Type, "instance_id": types.StringType, "status": types.StringType, "summary": types.StringType,
		"failures": types.ListType{ElemType: types.StringType}, "attested_region": types.StringType, "attested_zone_id": types.StringType,
		"report_key": types.StringType, "generated_at": types.StringType,
	}}
)

// gpuValidationSchema is the validation block and its computed attributes.
func gpuValidationSchema() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"validation": schema.SingleNestedAttribute{
			Optional: true,
			MarkdownDescription: "The validation gate: every node runs hwprobe at boot against the profile rendered from this declaration (the type's GPUs, NVLink links, EFA interfaces, vCPUs, memory and CPU features from the instance catalog, and the benchmarks below) " +
				"and publishes a signed report in-region; apply succeeds only when every node has reported and passed. Without this block nodes are not validated.",
			Attributes: map[string]schema.Attribute{
				"wait":             schema.BoolAttribute{Optional: true, MarkdownDescription: "Wait for the reports before apply succeeds. Default `true`; `false` bootstraps the nodes but does not gate."},
				"timeout":          schema.StringAttribute{Optional: true, MarkdownDescription: fmt.Sprintf("How long to wait for every node's report, e.g. `20m` (default %s), at most %s. On timeout apply fails naming the nodes that never reported; the end of their console output is in the provider's log, not in the error.", platform.DefaultValidationTimeout, platform.MaxValidationTimeout)},
				"on_failure":       schema.StringAttribute{Optional: true, MarkdownDescription: "What a failing node does: `fail` (default: apply fails naming node, check, expected and actual; the cluster is tainted), `warn` (apply succeeds with a warning), `replace` (the node is terminated and relaunched at its index in the cluster's zone, and the gate waits again, up to `max_replacements`)."},
				"max_replacements": schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("Nodes `replace` may relaunch in one apply, 0 to %d. Default %d.", platform.MaxValidationReplacements, platform.DefaultValidationMaxReplacements)},
				"level":            schema.StringAttribute{Optional: true, MarkdownDescription: "`quick` (default): inventory checks and the benchmarks listed. `full`: also GEMM and memory bandwidth (and NCCL all-reduce on multi-GPU types) against a fraction of the catalog peak."},
				"checks": schema.ListAttribute{ElementType: types.StringType, Optional: true,
					MarkdownDescription: "Profile sections to check: `host` (region, zone, type), `cpu` (vCPUs, memory), `cpu_features` (ISA features), `gpu` (model, count, memory, NVLink links), `efa` (interfaces). Default: all."},
				"benchmarks": schema.ListNestedAttribute{
					Optional:            true,
					MarkdownDescription: "Benchmarks hwprobe runs, each with thresholds: absolute (`min`, `max`, in the benchmark's unit) or `min_efficiency`, a fraction of the catalog peak.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"name":           schema.StringAttribute{Required: true, MarkdownDescription: "Benchmark name, e.g. `gpu_gemm_bf16`, `gpu_nccl_allreduce_busbw`, `cpu_stream_triad` (`hwprobe bench --help` lists them)."},
						"min":            schema.Float64Attribute{Optional: true, MarkdownDescription: "Lowest acceptable value, in the benchmark's unit."},
						"max":            schema.Float64Attribute{Optional: true, MarkdownDescription: "Highest acceptable value (latencies)."},
						"min_efficiency": schema.Float64Attribute{Optional: true, MarkdownDescription: "Lowest acceptable fraction of the catalog peak, above 0 and at most 1."},
						"optional":       schema.BoolAttribute{Optional: true, MarkdownDescription: "The benchmark may not run without failing the node."},
					}},
				},
				"reports_s3_uri":       schema.StringAttribute{Optional: true, MarkdownDescription: "In-region S3 prefix the nodes publish their reports to (`s3://bucket/prefix/`); each cluster writes under `<name>/`. Checked by residency at plan. The nodes' instance profile must allow `s3:PutObject` there."},
				"reports_kms_key_arn":  schema.StringAttribute{Optional: true, MarkdownDescription: "KMS key the reports are encrypted with (SSE-KMS); inside the jurisdiction."},
				"hwprobe_s3_uri":       schema.StringAttribute{Optional: true, MarkdownDescription: "In-region S3 location of the hwprobe binary; the node checks `hwprobe_sha256` before running it. Default: hwprobe already on the image at `/usr/local/bin/hwprobe`."},
				"hwprobe_sha256":       schema.StringAttribute{Optional: true, MarkdownDescription: "SHA-256 of the binary at `hwprobe_s3_uri` (64 hex digits)."},
				"trusted_certificates": schema.StringAttribute{Optional: true, MarkdownDescription: "PEM certificates that verify the nodes' signed identity documents: AWS's RSA-2048 certificate for the region. Unset: the AWS certificate embedded for the provider's region (us-east-1, us-west-2, eu-central-1; none for me-central-1, where this must be set). A report whose identity does not verify, or is another instance's, account's, region's or zone's, is rejected."},
				"attestation": schema.StringAttribute{Optional: true, MarkdownDescription: "Whether each report must be attested by the node's NitroTPM. Every apply's gate issues a challenge (the instance tag `" + platform.ChallengeTag + "`, read by the node from its metadata service) that each report must answer. " +
					"`auto` (default): required when the image supports NitroTPM (TpmSupport `v2.0`, UEFI boot); otherwise the plan warns that the evidence is not hardware-attested. `nitrotpm`: required; an image without NitroTPM fails the plan. `none`: not required (the plan warns). " +
					"An attested report comes with a NitroTPM attestation document (`<report key>.nitrotpm`) whose nonce is the challenge and whose user data is the SHA-256 of the report as stored; a report changed after the node wrote it, or attested under another root, instance or challenge, is rejected."},
				"attestation_pcrs": schema.MapAttribute{ElementType: types.StringType, Optional: true,
					MarkdownDescription: "NitroTPM PCR values every attested report's document must carry, by PCR index (`\"0\"` to `\"31\"`), each a SHA-384 value in 96 hex digits: the measurements of an attestable image (as `nitro-tpm-pcr-compute` prints them, e.g. PCR 4, 7 and 12). A node that booted anything else is rejected, naming the PCR. Unset: PCRs are not checked."},
				"attestation_roots": schema.StringAttribute{Optional: true, MarkdownDescription: "PEM root certificates attestation documents must chain to. Unset: the AWS Nitro root certificate embedded in the provider (AWS Nitro Enclaves root G1)."},
			},
		},
		"validation_profile": schema.StringAttribute{Computed: true, MarkdownDescription: "The hwprobe profile (HCL) every node is validated against, rendered from the declaration; known at plan when its inputs are."},
		"validation_bootstrap": schema.StringAttribute{Computed: true, Sensitive: true,
			MarkdownDescription: "The nodes' user data with the validation bootstrap: cloud-init MIME multipart with `user_data` first, then the profile, then the script that gets hwprobe, validates and publishes."},
		"validation_results": schema.ListNestedAttribute{
			Computed:            true,
			MarkdownDescription: "What the gate found per node at the last apply, by node index.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"index":            schema.Int64Attribute{Computed: true, MarkdownDescription: "Node index."},
				"instance_id":      schema.StringAttribute{Computed: true, MarkdownDescription: "Instance id."},
				"status":           schema.StringAttribute{Computed: true, MarkdownDescription: "`pass`, `fail`, `rejected` (its reports' identity did not verify or was another node's) or `missing`; of a GPU cluster with `orchestrator.slurm`, after a refresh, `drained` for a node hwprobe's health check drained in Slurm since (`summary` is the drain's reason, `generated_at` its time)."},
				"summary":          schema.StringAttribute{Computed: true, MarkdownDescription: "One line: the checks passed, or the first failure."},
				"failures":         schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Each failed check: check, expected, observed."},
				"attested_region":  schema.StringAttribute{Computed: true, MarkdownDescription: "Region of the verified identity document."},
				"attested_zone_id": schema.StringAttribute{Computed: true, MarkdownDescription: "Zone id of the verified identity document."},
				"report_key":       schema.StringAttribute{Computed: true, MarkdownDescription: "The report judged, under the cluster's reports prefix."},
				"generated_at":     schema.StringAttribute{Computed: true, MarkdownDescription: "When the report was generated (RFC 3339)."},
			}},
		},
	}
}

// gpuValidationSpec translates the block; nil without one.
func gpuValidationSpec(ctx context.Context, o types.Object, s *platform.GPUClusterSpec, diags *diag.Diagnostics) *platform.ValidationSpec {
	if o.IsNull() {
		return nil
	}
	if o.IsUnknown() {
		s.Unknown = append(s.Unknown, "validation")
		return &platform.ValidationSpec{Wait: platform.DefaultValidationWait}
	}
	var m gpuValidationModel
	diags.Append(o.As(ctx, &m, gpuObjectAs)...)
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			s.Unknown = append(s.Unknown, "validation."+p)
		}
		return v.ValueString()
	}
	v := &platform.ValidationSpec{Wait: platform.DefaultValidationWait}
	if !m.Wait.IsNull() && !m.Wait.IsUnknown() {
		v.Wait = m.Wait.ValueBool()
	}
	if t := str("timeout", m.Timeout); t != "" {
		d, err := platform.ParseValidationTimeout(t)
		if err != nil {
			s.InputProblems = append(s.InputProblems, platform.Problem{Path: "validation.timeout", Summary: "Invalid validation timeout", Detail: err.Error()})
		}
		v.Timeout = d
	}
	v.OnFailure = str("on_failure", m.OnFailure)
	if !m.MaxReplacements.IsNull() && !m.MaxReplacements.IsUnknown() {
		n := int(max(min(m.MaxReplacements.ValueInt64(), 1<<20), -1))
		v.MaxReplacements = &n
	}
	v.Level = str("level", m.Level)
	if m.Checks.IsUnknown() {
		s.Unknown = append(s.Unknown, "validation.checks")
	} else if !m.Checks.IsNull() {
		v.Checks = []string{}
		diags.Append(m.Checks.ElementsAs(ctx, &v.Checks, false)...)
	}
	if m.Benchmarks.IsUnknown() {
		s.Unknown = append(s.Unknown, "validation.benchmarks")
	} else if !m.Benchmarks.IsNull() {
		var bs []gpuBenchmarkModel
		diags.Append(m.Benchmarks.ElementsAs(ctx, &bs, false)...)
		for i, b := range bs {
			v.Benchmarks = append(v.Benchmarks, platform.BenchmarkThreshold{
				Name: str(fmt.Sprintf("benchmarks[%d].name", i), b.Name),
				Min:  b.Min.ValueFloat64Pointer(), Max: b.Max.ValueFloat64Pointer(), MinEfficiency: b.MinEfficiency.ValueFloat64Pointer(),
				Optional: b.Optional.ValueBool(),
			})
		}
	}
	v.ReportsS3URI = str("reports_s3_uri", m.ReportsS3URI)
	v.ReportsKMSKeyARN = str("reports_kms_key_arn", m.ReportsKMSKeyARN)
	v.HwprobeS3URI = str("hwprobe_s3_uri", m.HwprobeS3URI)
	v.HwprobeSHA256 = str("hwprobe_sha256", m.HwprobeSHA256)
	v.TrustedCertificates = str("trusted_certificates", m.TrustedCertificates)
	v.Attestation = str("attestation", m.Attestation)
	v.AttestationRoots = str("attestation_roots", m.AttestationRoots)
	if m.AttestationPCRs.IsUnknown() {
		s.Unknown = append(s.Unknown, "validation.attestation_pcrs")
	} else if !m.AttestationPCRs.IsNull() {
		// A PCR value known only at apply is checked then: the whole
		// map waits, as one unknown (its known values are checked with
		// it).
		var elems map[string]types.String
		diags.Append(m.AttestationPCRs.ElementsAs(ctx, &elems, false)...)
		v.AttestationPCRs = map[string]string{}
		for k, e := range elems {
			if e.IsUnknown() {
				s.Unknown = append(s.Unknown, "validation.attestation_pcrs")
			}
			v.AttestationPCRs[k] = e.ValueString()
		}
	}
	return v
}

// planValidationAttrs sets the computed validation attributes of the plan.
func planValidationAttrs(plan, state *gpuClusterModel, p *platform.GPUClusterPlan, hasState, changed bool) {
	var prior types.List
	if hasState {
		prior = state.ValidationResults
	}
	keep := hasState && !changed
	if keep && gateUnfinished(plan, prior) {
		keep = false // a cut apply: the next one runs the gate, and says so
	}
	planGateAttrs(!plan.Validation.IsNull(), &plan.ValidationProfile, &plan.ValidationBootstrap, &plan.ValidationResults,
		p.Profile, p.Bootstrap, prior, keep)
}

// gateUnfinished reports whether the gate of a waiting validation did not
// judge every node the last time: an apply cut after the launch (Ctrl-C,
// a timeout) records the nodes with fewer results than nodes, and the next
// apply runs the gate again. The results are then unknown at plan.
func gateUnfinished(plan *gpuClusterModel, prior types.List) bool {
	if plan.Validation.IsNull() || plan.Validation.IsUnknown() || prior.IsNull() || prior.IsUnknown() || plan.NodeCount.IsUnknown() {
		return false
	}
	if w, ok := plan.Validation.Attributes()["wait"].(types.Bool); ok && !w.IsNull() && !w.IsUnknown() && !w.ValueBool() {
		return false // no gate: no results, ever
	}
	return int64(len(prior.Elements())) < plan.NodeCount.ValueInt64()
}

// planGateAttrs sets the computed attributes of a validation block at plan,
// for the GPU cluster and the CPU footprint alike: all null without the
// block; else the rendered profile and bootstrap (unknown when the plan
// could not render them yet), and the prior results when keep (nothing the
// gate checks changes) and they are known, unknown otherwise.
func planGateAttrs(declared bool, profile, bootstrap *types.String, results *types.List, prof, boot string, prior types.List, keep bool) {
	if !declared {
		*profile, *bootstrap = types.StringNull(), types.StringNull()
		*results = types.ListNull(gpuValidationResultType)
		return
	}
	known := func(s string) types.String {
		if s == "" {
			return types.StringUnknown()
		}
		return types.StringValue(s)
	}
	*profile, *bootstrap = known(prof), known(boot)
	if keep && !prior.IsNull() && !prior.IsUnknown() {
		*results = prior
	} else {
		*results = types.ListUnknown(gpuValidationResultType)
	}
}

// finishValidationAttrs makes the computed validation attributes known
// after an apply: what the apply rendered, else null.
func finishValidationAttrs(m *gpuClusterModel, c *platform.GPUCluster) {
	fill := func(v *types.String, s string) {
		if v.IsUnknown() {
			if c != nil && s != "" {
				*v = types.StringValue(s)
			} else {
				*v = types.StringNull()
			}
		}
	}
	var prof, boot string
	if c != nil {
		prof, boot = c.ValidationProfile, c.ValidationBootstrap
	}
	fill(&m.ValidationProfile, prof)
	fill(&m.ValidationBootstrap, boot)
}

// setValidationResults records what the gate found.
func setValidationResults(ctx context.Context, m *gpuClusterModel, c *platform.GPUCluster, diags *diag.Diagnostics) {
	if m.Validation.IsNull() {
		m.ValidationProfile, m.ValidationBootstrap = types.StringNull(), types.StringNull()
		m.ValidationResults = types.ListNull(gpuValidationResultType)
		return
	}
	finishValidationAttrs(m, c)
	if c == nil {
		if m.ValidationResults.IsUnknown() {
			m.ValidationResults = types.ListNull(gpuValidationResultType)
		}
		return
	}
	var out []attr.Value
	for _, v := range c.Validation {
		fails, d := types.ListValueFrom(ctx, types.StringType, nonNil(v.Failures))
		diags.Append(d...)
		gen := ""
		if !v.GeneratedAt.IsZero() {
			gen = v.GeneratedAt.UTC().Format(time.RFC3339)
		}
		obj, d := types.ObjectValue(gpuValidationResultType.AttrTypes, map[string]attr.Value{
			"index": types.Int64Value(int64(v.Index)), "instance_id": types.StringValue(v.InstanceID), "status": types.StringValue(v.Status),
			"summary": types.StringValue(v.Summary), "failures": fails, "attested_region": types.StringValue(v.AttestedRegion),
			"attested_zone_id": types.StringValue(v.AttestedZoneID), "report_key": types.StringValue(v.ReportKey), "generated_at": types.StringValue(gen),
		})
		diags.Append(d...)
		out = append(out, obj)
	}
	if out == nil {
		// The gate did not run (wait = false, or a failure before it).
		if m.ValidationResults.IsUnknown() {
			m.ValidationResults = types.ListValueMust(gpuValidationResultType, []attr.Value{})
		}
		return
	}
	l, d := types.ListValue(gpuValidationResultType, out)
	diags.Append(d...)
	m.ValidationResults = l
}

// nullValidation is the state of a cluster imported without its block.
func nullValidation(m *gpuClusterModel) {
	m.Validation = types.ObjectNull(gpuValidationType)
	m.ValidationProfile, m.ValidationBootstrap = types.StringNull(), types.StringNull()
	m.ValidationResults = types.ListNull(gpuValidationResultType)
}

// markDrained records in the validation results the nodes hwprobe's health
// check drained in Slurm since the gate passed them (a refresh): status
// platform.NodeDrained, the drain's reason as summary, its time as
// generated_at. The other results are kept.
func markDrained(m *gpuClusterModel, drained []platform.HwprobeDrained, diags *diag.Diagnostics) {
	m.ValidationResults = markDrainedResults(m.ValidationResults, drained, diags)
}

// markDrainedResults is validation_results l with the entries of the
// instances in drained marked as markDrained says.
func markDrainedResults(l types.List, drained []platform.HwprobeDrained, diags *diag.Diagnostics) types.List {
	if len(drained) == 0 || l.IsNull() || l.IsUnknown() {
		return l
	}
	by := map[string]platform.HwprobeDrained{}
	for _, d := range drained {
		by[d.InstanceID] = d
	}
	elems := l.Elements()
	out := make([]attr.Value, len(elems))
	for i, e := range elems {
		out[i] = e
		o, ok := e.(types.Object)
		if !ok {
			continue
		}
		attrs := o.Attributes()
		id, _ := attrs["instance_id"].(types.String)
		d, ok := by[id.ValueString()]
		if !ok {
			continue
		}
		next := maps.Clone(attrs)
		next["status"] = types.StringValue(platform.NodeDrained)
		next["summary"] = types.StringValue(d.Reason)
		next["generated_at"] = types.StringValue(d.At.UTC().Format(time.RFC3339))
		obj, dd := types.ObjectValue(gpuValidationResultType.AttrTypes, next)
		diags.Append(dd...)
		out[i] = obj
	}
	marked, d := types.ListValue(gpuValidationResultType, out)
	diags.Append(d...)
	return marked
}

// drainedResults are the nodes the recorded validation results say hwprobe
// drained (markDrained).
func drainedResults(l types.List) []platform.HwprobeDrained {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []platform.HwprobeDrained
	for _, e := range l.Elements() {
		o, ok := e.(types.Object)
		if !ok {
			continue
		}
		a := o.Attributes()
		status, _ := a["status"].(types.String)
		if status.ValueString() != platform.NodeDrained {
			continue
		}
		idx, _ := a["index"].(types.Int64)
		id, _ := a["instance_id"].(types.String)
		sum, _ := a["summary"].(types.String)
		out = append(out, platform.HwprobeDrained{Index: int(idx.ValueInt64()), InstanceID: id.ValueString(), Reason: sum.ValueString()})
	}
	return out
}
