package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The CPU footprint's validation gate. At plan the profile of the chosen
// type and the bootstrap around the user's own user data; at apply the
// group's Auto Scaling lifecycle hook and the wait for the instances'
// reports (the gate loop the GPU cluster uses). The hook holds for the
// footprint's whole life: every instance the group launches later (scale
// out, schedules, replacements) waits in Pending:Wait until hwprobe on it
// completes the lifecycle action, CONTINUE when it passed and ABANDON when
// it failed, so that no instance serves before its report passed.

// MaxFootprintValidationTimeout bounds a footprint's validation timeout:
// it is the lifecycle hook's heartbeat, which Auto Scaling caps at two
// hours.
const MaxFootprintValidationTimeout = cloud.MaxHookHeartbeat * time.Second

// FootprintValidationHookName is the lifecycle hook a validated
// footprint's group carries.
const FootprintValidationHookName = cloud.ValidationHookName

// validationProblems checks the block: the shared checks, and the
// footprint's bound on the timeout.
func (s *CPUFootprintSpec) validationProblems() []Problem {
	v := s.Validation
	if v == nil {
		return nil
	}
	ps := v.Validate("validation", s.Known)
	if v.Timeout > MaxFootprintValidationTimeout && v.Timeout <= MaxValidationTimeout {
		ps = append(ps, Problem{Path: "validation.timeout", Summary: "Validation timeout too long for a footprint",
			Detail: fmt.Sprintf("%s: a footprint's timeout is its Auto Scaling lifecycle hook's heartbeat, at most %s.", v.Timeout, MaxFootprintValidationTimeout)})
	}
	return ps
}

func (s *CPUFootprintSpec) validationKnown() bool {
	for _, u := range s.Unknown {
		if u == "validation" || strings.HasPrefix(u, "validation.") {
			return false
		}
	}
	return true
}

// FootprintValidationHook is the lifecycle hook of a footprint validated
// by v: EC2_INSTANCE_LAUNCHING, heartbeat the validation timeout, default
// result ABANDON.
func FootprintValidationHook(v ValidationSpec) cloud.LifecycleHook {
	return cloud.ValidationHook(int(v.WithDefaults().Timeout / time.Second))
}

// lifecycleOnFail is what hwprobe answers the hook for a failing node:
// ABANDON, unless on_failure = "warn" keeps failing nodes.
func lifecycleOnFail(v ValidationSpec) string {
	if v.WithDefaults().OnFailure == OnFailureWarn {
		return cloud.LifecycleContinue
	}
	return cloud.LifecycleAbandon
}

// FootprintFeatureBenchmarks maps the ISA features a footprint may require
// to the hwprobe benchmark that shows a node does what they were bought
// for: a footprint requiring one of Features gets Benchmark in its profile,
// unless its validation block declares that benchmark itself. Where the
// chosen instance type has AMX (AMX, its tile feature), hwprobe runs the
// AMX kernel (AMXBackend) and judges it against the tile units' peak: the
// profile then requires that kernel and AMXEfficiency of that peak.
// Otherwise hwprobe runs the AVX-512 kernel (AVX512_BF16, AVX512-VNNI,
// Backend), and the profile requires that kernel and
// DefaultFeatureBenchmarkEfficiency of its peak: a node without the
// feature runs the benchmark too (bf16 widened to fp32, int8 on AVX2's
// pair-summing kernel), each judged against its own kernel's peak, and
// would pass the threshold alone where a profile leaves out the
// cpu_features check.
var FootprintFeatureBenchmarks = []struct {
	Features   []string
	Benchmark  string
	AMX        string
	AMXBackend string
	Backend    string
}{
	{[]string{"amx_bf16", "avx512_bf16"}, "cpu_bf16_gemm", "amx_bf16", profile.BackendAMXBF16, profile.BackendAVX512BF16},
	{[]string{"amx_int8", "avx512_vnni"}, "cpu_int8_gemm", "amx_int8", profile.BackendAMXInt8, profile.BackendAVX512VNNI},
}

// DefaultFeatureBenchmarkEfficiency is the threshold of a benchmark a
// required feature adds on the AVX-512 path: half the peak, as the full
// level's cpu_sgemm.
const DefaultFeatureBenchmarkEfficiency = 0.5

// AMXEfficiency is the threshold of a benchmark a required feature adds
// where the AMX kernel runs: 2% of the tile units' peak (1024 bf16 FLOPs,
// 2048 int8 ops per cycle per core). The peak is the tile instruction's
// rate; a whole-node GEMM is held far below it by memory and L2
// bandwidth: on a 16-core Xeon with AMX, hwprobe's AMX kernels ran at
// 5-11% of it (bf16) and 3.4-11% (int8), and oneDNN's bf16 GEMM at 8-10%.
// The threshold catches a node whose tiles run far below that; the
// required backend, one whose AMX does not run at all.
const AMXEfficiency = 0.02

// featureBenchmarks returns v with the benchmarks the required features
// call for (FootprintFeatureBenchmarks) added after the declared ones,
// each once; a declared benchmark keeps its own thresholds. typeFeatures
// are the chosen instance type's CPU features (nil where unknown: the
// AVX-512 defaults).
func featureBenchmarks(v ValidationSpec, required, typeFeatures []string) ValidationSpec {
	out := slices.Clone(v.Benchmarks)
	for _, fb := range FootprintFeatureBenchmarks {
		if !slices.ContainsFunc(fb.Features, func(f string) bool { return slices.Contains(required, f) }) ||
			slices.ContainsFunc(out, func(b BenchmarkThreshold) bool { return b.Name == fb.Benchmark }) {
			continue
		}
		eff := DefaultFeatureBenchmarkEfficiency
		b := BenchmarkThreshold{Name: fb.Benchmark, MinEfficiency: &eff, Backend: fb.Backend}
		if slices.Contains(typeFeatures, fb.AMX) && slices.Contains(typeFeatures, "amx_tile") {
			eff = AMXEfficiency
			b.Backend = fb.AMXBackend
		}
		out = append(out, b)
	}
	v.Benchmarks = out
	return v
}

// footprintRendered is the validation block a footprint's profile is
// rendered from: the declared one with the benchmarks its required
// features add (nil without validation). A change of the required features
// that changes those benchmarks changes the profile, and rolls the
// instances as a change of the block does.
func footprintRendered(s CPUFootprintSpec) *ValidationSpec {
	if s.Validation == nil {
		return nil
	}
	v := featureBenchmarks(*s.Validation, s.Requirements.CPUFeatures, nil)
	return &v
}

// ProfileForCPUFootprint renders the profile every instance of a footprint
// is validated against: what the catalog says of the chosen type (vCPUs,
// memory, CPU features), the validation block's benchmarks and those the
// footprint's required features call for (featureBenchmarks), and the
// footprint's reports prefix.
func ProfileForCPUFootprint(name string, v ValidationSpec, required []string, facts NodeFacts, region string, zoneIDs []string) string {
	return RenderProfile(footprintProfile(name, v, required, facts, region, zoneIDs))
}

func footprintProfile(name string, v ValidationSpec, required []string, facts NodeFacts, region string, zoneIDs []string) *profile.Profile {
	v = featureBenchmarks(v, required, facts.CPUFeatures)
	return ProfileForInstanceType(v, facts, ProfileTarget{
		Name: name, Region: region, ZoneIDs: zoneIDs,
		ReportsPrefix: v.ReportsPrefix(name), ReportsKMSKeyARN: v.ReportsKMSKeyARN,
	})
}

// FootprintBootstrap is the user data of a validated footprint's
// instances: the user's own first, then the profile, then the script that
// validates, publishes and answers the gate's challenges. The instance
// does not complete its own launch lifecycle action: the gate does, or
// the approver (cpufootprint_approve.go).
func FootprintBootstrap(region, profileText, userData string, v ValidationSpec, join *slurm.JoinConfig, eksNodeConfig string, kubeadm *KubeadmBootstrap) (string, error) {
	return Bootstrap(BootstrapInput{Profile: profileText, Region: region, UserData: userData,
		HwprobeS3URI: v.HwprobeS3URI, HwprobeSHA256: v.HwprobeSHA256, Slurm: join, EKSNodeConfig: eksNodeConfig, Kubeadm: kubeadm})
}

// planFootprintValidation renders the profile and bootstrap into the plan
// when every input is known, and makes the launch template's user data the
// bootstrap.
func (e *Env) planFootprintValidation(ctx context.Context, spec CPUFootprintSpec, p *CPUFootprintPlan) error {
	v := spec.Validation
	if v == nil {
		return nil
	}
	if v.Wait && v.TrustedCertificates == "" && e.TrustedCertificates == "" && spec.Known("validation.trusted_certificates") {
		p.Problems = append(p.Problems, Problem{Path: "validation.trusted_certificates", Summary: "No trusted certificates",
			Detail: "The gate verifies each instance's signed identity document: set validation.trusted_certificates to AWS's RSA-2048 certificate for the region (PEM, from the EC2 documentation \"Verify the instance identity document\")."})
	}
	if !v.Wait {
		p.Problems = append(p.Problems, Problem{Path: "validation.wait", Warning: true, Summary: "Instances wait for an approver",
			Detail: fmt.Sprintf("With wait = false, apply does not judge the instances, and no instance puts itself in service: each waits in Pending:Wait until `mlplatform approve` (run with this footprint's validation_approver) approves it, and is abandoned after %s without an approval.", v.WithDefaults().Timeout)})
	}
	var attestProblems []Problem
	p.Attested, attestProblems = planAttestation(v, p.ImageID, p.imageTPM, spec.Known)
	p.Problems = append(p.Problems, attestProblems...)
	if !p.Decided || !spec.validationKnown() || !spec.Known("name") || !spec.Known("user_data") || spec.Slurm != nil && !slurmKnown(spec.Unknown) ||
		spec.EKS != nil && (!eksKnown(spec.Unknown) || p.eks == nil) || spec.Kube != nil && (!eksKnown(spec.Unknown) || p.kube == nil) {
		return nil
	}
	cat, err := e.CatalogFor(ctx, p.Decision.InstanceType)
	if err != nil {
		return err
	}
	it, ok := cat.Lookup(p.Decision.InstanceType)
	if !ok {
		return nil // Decide said so
	}
	prof := footprintProfile(spec.Name, *v, spec.Requirements.CPUFeatures, NodeFactsFromCatalog(it, 0), e.Region(), p.Decision.ZoneIDs)
	p.Profile = RenderProfile(prof)
	var join *slurm.JoinConfig
	if spec.Slurm != nil {
		n := slurmNodeFromProfile(spec.Slurm, spec.Name, p.Profile, prof, 0, "")
		c := slurmJoinConfig(spec.Slurm, e.Region(), spec.Name, false, n)
		join = &c
		p.SlurmControllerConfig = SlurmControllerConfig(spec.Slurm, spec.Name, n, MaxFootprintSize)
	}
	nodeConfig := ""
	if spec.EKS != nil {
		nodeConfig = EKSNodeConfig(p.eks.Cluster, EKSNodeLabels(spec.EKS, "cpu-footprint", spec.Name, p.Decision.InstanceType, "", p.Profile))
	}
	var kubeadm *KubeadmBootstrap
	if spec.Kube != nil {
		kubeadm = &KubeadmBootstrap{TokenSecretARN: spec.Kube.JoinTokenSecretARN,
			JoinConfig: KubeadmJoinConfig(p.kube, KubeNodeLabels(spec.Kube, "cpu-footprint", spec.Name, p.Decision.InstanceType, "", p.Profile))}
	}
	ud, err := FootprintBootstrap(e.Region(), p.Profile, spec.UserData, *v, join, nodeConfig, kubeadm)
	if err != nil {
		p.Problems = append(p.Problems, Problem{Path: "user_data", Summary: "User data cannot run beside the validation bootstrap", Detail: err.Error()})
		return nil
	}
	if len(ud) > 16*1024 {
		p.Problems = append(p.Problems, Problem{Path: "user_data", Summary: "User data too large with the validation bootstrap",
			Detail: fmt.Sprintf("user_data and the validation bootstrap make %d bytes; EC2 accepts 16 KiB. Fetch the rest of your user data from S3 at boot.", len(ud))})
		return nil
	}
	p.Bootstrap = ud
	p.Approver = e.ApproverConfigFor(spec.Name, *v, p)
	p.template.Node.UserData = ud
	// One profile names one instance type: a validated spot footprint
	// launches the chosen type only.
	p.InstanceTypes = []string{p.Decision.InstanceType}
	return nil
}

// syncFootprintHook puts the validation hook on the group when the
// footprint is validated, and removes it when validation was removed.
func (e *Env) syncFootprintHook(ctx context.Context, prior *CPUFootprintRecord, spec CPUFootprintSpec, group string, o CPUFootprintOptions) error {
	if spec.Validation != nil {
		h := FootprintValidationHook(*spec.Validation)
		o.progress("CPU footprint %s: lifecycle hook %s (instances wait up to %ds for their validation, then %s)", spec.Name, h.Name, h.HeartbeatSecs, h.DefaultResult)
		return cloud.EnsureValidationHook(ctx, e.Clients.AutoScaling, group, h)
	}
	if prior != nil && prior.Spec.Validation != nil {
		o.progress("CPU footprint %s: removing lifecycle hook %s", spec.Name, cloud.ValidationHookName)
		return cloud.DeleteValidationHook(ctx, e.Clients.AutoScaling, group)
	}
	return nil
}

// live reports whether an instance is (or is about to be) in the group.
func liveInstance(state string) bool {
	return !strings.HasPrefix(state, "Terminat") && !strings.HasPrefix(state, "Detach") && state != "Detached"
}

// gateCPUFootprint waits for the reports of the group's instances with the
// shared gate loop. The nodes are the first desired-capacity instances the
// group lists, numbered in the order seen; an instance a failing node's
// ABANDON had Auto Scaling terminate stays judged by its report. replace
// terminates a failing instance through Auto Scaling (the desired capacity
// kept) and waits for its replacement's report.
func (e *Env) gateCPUFootprint(ctx context.Context, spec CPUFootprintSpec, plan *CPUFootprintPlan, f *CPUFootprint, o CPUFootprintOptions) error {
	v := spec.Validation.WithDefaults()
	if !v.Wait || plan.Profile == "" {
		return nil
	}
	zoneID, err := e.zoneIDsByName(ctx)
	if err != nil {
		return err
	}
	group := CPUFootprintResourceName(spec.Name)
	var nodes []ExpectedNode // the instances judged, by index
	out := map[string]bool{} // replaced: no longer judged
	next := 0
	live := map[string]bool{}
	resource := "CPU footprint " + spec.Name
	approver := newLaunchApprover(e, group, resource, v, o.progress)
	judged := approver.judged
	var kg *kubeGate
	if spec.EKS != nil {
		if kg, err = e.newKubeGate(resource, spec.Name, plan.eks, o.progress); err != nil {
			return err
		}
	}
	if spec.Kube != nil {
		if kg, err = newKubeconfigGate(resource, spec.Name, plan.kube, o.progress); err != nil {
			return err
		}
	}
	if kg != nil {
		judged = func(ctx context.Context, res GateResult) error {
			if err := approver.judged(ctx, res); err != nil {
				return err
			}
			return kg.judged(ctx, res)
		}
	}
	res, err := e.runGate(ctx, gateRun{
		Resource: resource, Spec: v, Profile: plan.Profile, Prefix: v.ReportsPrefix(spec.Name),
		Progress: o.progress, Attested: plan.Attested,
		Nodes: func(ctx context.Context) ([]ExpectedNode, int, error) {
			g, err := cloud.FindFootprintGroup(ctx, e.Clients.AutoScaling, group)
			if errors.Is(err, cloud.ErrNotFound) {
				return nil, 0, fmt.Errorf("validating %s: its Auto Scaling group %s is gone", resource, group)
			}
			if err != nil {
				return nil, 0, err
			}
			clear(live)
			approver.observe(g.Instances)
			for _, in := range g.Instances {
				if !liveInstance(in.LifecycleState) {
					continue
				}
				live[in.ID] = true
				known := slices.ContainsFunc(nodes, func(n ExpectedNode) bool { return n.InstanceID == in.ID })
				if known || out[in.ID] || len(nodes) >= int(g.Desired) {
					continue
				}
				nodes = append(nodes, ExpectedNode{Index: next, InstanceID: in.ID, Zone: in.ZoneName, ZoneID: zoneID[in.ZoneName]})
				next++
			}
			return slices.Clone(nodes), max(int(g.Desired)-len(nodes), 0), nil
		},
		Replace: func(ctx context.Context, res GateResult, used int) error {
			var ids []string
			for _, n := range nodes {
				if slices.Contains(res.Replace, n.Index) {
					ids = append(ids, n.InstanceID)
				}
			}
			o.progress("%s: validation: replacing instances %s (%d of %d replacements used)", resource, strings.Join(ids, ", "), used, *v.MaxReplacements)
			if kg != nil {
				if err := kg.drain(ctx, ids); err != nil {
					return err
				}
			}
			for _, id := range ids {
				if live[id] {
					if err := approver.replace(ctx, id); err != nil {
						return err
					}
				}
				out[id] = true
			}
			if kg != nil {
				if err := kg.forget(ctx, ids); err != nil {
					return err
				}
			}
			nodes = slices.DeleteFunc(nodes, func(n ExpectedNode) bool { return out[n.InstanceID] })
			return nil
		},
		Judged: judged,
	})
	err = approver.afterGate(ctx, res, err)
	if kg != nil && err == nil {
		err = kg.waitLifted(ctx, res, v.Timeout, e.polling().Gate.Interval)
	}
	f.Validation = res.Nodes
	if err == nil && res.Action == GateWarn {
		f.ValidationWarning = res.Warning(resource)
	}
	return err
}
