package platform

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The GPU cluster's validation gate: the profile and bootstrap at plan, and
// after the nodes run, the wait for their reports.

// validationKnown reports whether every value of the validation block is
// known.
func (s *GPUClusterSpec) validationKnown() bool {
	for _, u := range s.Unknown {
		if u == "validation" || strings.HasPrefix(u, "validation.") {
			return false
		}
	}
	return true
}

// planValidation renders the profile and bootstrap into the plan when every
// input is known, and makes the launch template's user data the bootstrap.
func (e *Env) planValidation(ctx context.Context, spec GPUClusterSpec, p *GPUClusterPlan) error {
	v := spec.Validation
	if v == nil {
		return nil
	}
	if v.Wait && v.TrustedCertificates == "" && e.TrustedCertificates == "" && spec.Known("validation.trusted_certificates") && !slices.Contains(DefaultCertificateRegions(), e.Region()) {
		p.Problems = append(p.Problems, Problem{Path: "validation.trusted_certificates", Summary: "No trusted certificates",
			Detail: fmt.Sprintf("The gate verifies each node's signed identity document. mlplatform carries AWS's RSA-2048 certificates for %s, not for %s: set validation.trusted_certificates to AWS's RSA-2048 certificate for the region (PEM, from %s).",
				strings.Join(DefaultCertificateRegions(), ", "), e.Region(), AWSIdentityCertificatesSource)})
	}
	var attestProblems []Problem
	p.Attested, attestProblems = planAttestation(v, p.ImageID, p.imageTPM, spec.Known)
	p.Problems = append(p.Problems, attestProblems...)
	known := spec.validationKnown() && spec.Known("name") && spec.Known("instance_type") && spec.Known("user_data") &&
		spec.Known("efa_interfaces") && len(p.allowedOffered) > 0 && (spec.Slurm == nil || slurmKnown(spec.Unknown) && p.PlacementGroup != "") &&
		(spec.EKS == nil || eksKnown(spec.Unknown) && p.eks != nil && p.PlacementGroup != "") &&
		(spec.Kube == nil || eksKnown(spec.Unknown) && p.kube != nil && p.PlacementGroup != "")
	if !known || p.Type.Name == "" {
		return nil
	}
	cat, err := e.Catalog(ctx)
	if err != nil {
		return err
	}
	it, ok := cat.Lookup(spec.InstanceType)
	if !ok {
		return nil // checkType said so
	}
	prof := ProfileForGPUCluster(spec, NodeFactsFromCatalog(it, p.EFAInterfaces), e.Region(), p.allowedOffered)
	p.Profile = RenderProfile(prof)
	var join *slurm.JoinConfig
	if spec.Slurm != nil {
		n := slurmNodeFromProfile(spec.Slurm, spec.Name, p.Profile, prof, p.EFAInterfaces, p.PlacementGroup)
		c := slurmJoinConfig(spec.Slurm, e.Region(), spec.Name, true, n)
		join = &c
		p.SlurmControllerConfig = SlurmControllerConfig(spec.Slurm, spec.Name, n, MaxGPUClusterNodes)
	}
	nodeConfig := ""
	if spec.EKS != nil {
		nodeConfig = EKSNodeConfig(p.eks.Cluster, EKSNodeLabels(spec.EKS, "gpu-cluster", spec.Name, spec.InstanceType, p.PlacementGroup, p.Profile))
	}
	var kubeadm *KubeadmBootstrap
	if spec.Kube != nil {
		kubeadm = &KubeadmBootstrap{TokenSecretARN: spec.Kube.JoinTokenSecretARN,
			JoinConfig: KubeadmJoinConfig(p.kube, KubeNodeLabels(spec.Kube, "gpu-cluster", spec.Name, spec.InstanceType, p.PlacementGroup, p.Profile))}
	}
	ud, err := Bootstrap(BootstrapInput{Profile: p.Profile, Region: e.Region(), UserData: spec.UserData,
		HwprobeS3URI: v.HwprobeS3URI, HwprobeSHA256: v.HwprobeSHA256, GPU: it.GPU != nil, Slurm: join, EKSNodeConfig: nodeConfig, Kubeadm: kubeadm})
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
	p.Template.UserData = ud
	return nil
}

// validationRenderEqual reports whether two validation blocks render the
// same bootstrap: their other settings (wait, timeout, on_failure,
// max_replacements, trusted certificates) change only what the gate does.
func validationRenderEqual(a, b *ValidationSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := a.WithDefaults(), b.WithDefaults()
	return slices.Equal(x.Checks, y.Checks) && x.Level == y.Level && reflect.DeepEqual(x.Benchmarks, y.Benchmarks) &&
		x.ReportsS3URI == y.ReportsS3URI && x.ReportsKMSKeyARN == y.ReportsKMSKeyARN && x.HwprobeS3URI == y.HwprobeS3URI && x.HwprobeSHA256 == y.HwprobeSHA256
}

// gateGPUCluster waits for the cluster's reports and acts on the decision:
// pass, warn (returned as the cluster's ValidationWarning), fail, or
// replace failing nodes and wait again. It returns the cluster as it is
// after any replacement.
func (e *Env) gateGPUCluster(ctx context.Context, spec GPUClusterSpec, plan *GPUClusterPlan, c *cloud.GPUCluster, o GPUClusterOptions) (*GPUCluster, error) {
	v := spec.Validation.WithDefaults()
	out := gpuClusterFromCloud(c)
	if !v.Wait || plan.Profile == "" {
		return out, nil
	}
	resource := "GPU cluster " + spec.Name
	var kg *kubeGate
	if spec.EKS != nil {
		var err error
		if kg, err = e.newKubeGate(resource, spec.Name, plan.eks, o.progress); err != nil {
			return out, err
		}
	}
	if spec.Kube != nil {
		var err error
		if kg, err = newKubeconfigGate(resource, spec.Name, plan.kube, o.progress); err != nil {
			return out, err
		}
	}
	run := gateRun{
		Resource: resource, Spec: v, Profile: plan.Profile, Prefix: v.ReportsPrefix(spec.Name),
		Progress: o.progress, Attested: plan.Attested,
		Nodes: func(context.Context) ([]ExpectedNode, int, error) { return expectedNodes(out), 0, nil },
		Replace: func(ctx context.Context, res GateResult, used int) error {
			var ids []cloud.GPUNode
			for _, n := range c.Nodes {
				if slices.Contains(res.Replace, n.Index) {
					ids = append(ids, n)
				}
			}
			o.progress("GPU cluster %s: validation: replacing nodes %s (%d of %d replacements used)", spec.Name, cloud.FormatIndices(res.Replace), used, *v.MaxReplacements)
			if kg != nil {
				var instances []string
				for _, n := range ids {
					instances = append(instances, n.InstanceID)
				}
				if err := kg.drain(ctx, instances); err != nil {
					return err
				}
			}
			if err := e.terminate(ctx, spec, ids, o); err != nil {
				return err
			}
			if kg != nil {
				var instances []string
				for _, n := range ids {
					instances = append(instances, n.InstanceID)
				}
				if err := kg.forget(ctx, instances); err != nil {
					return err
				}
			}
			// The converge launches the missing indices again, in the
			// cluster's zone (one placement group), inside the
			// jurisdiction.
			next, _, err := e.convergeGPUCluster(ctx, spec, o, c) // c before the replacement: its owner and template tags; the nodes are read anew
			c, out = next, gpuClusterFromCloud(next)
			return err
		},
	}
	if kg != nil {
		run.Judged = kg.judged
	}
	res, err := e.runGate(ctx, run)
	if kg != nil && err == nil {
		err = kg.waitLifted(ctx, res, v.Timeout, e.polling().Gate.Interval)
	}
	if out == nil {
		return out, err
	}
	out.Validation = res.Nodes
	if err == nil && res.Action == GateWarn {
		out.ValidationWarning = res.Warning(resource)
	}
	return out, err
}

// gateAfterConverge runs the gate over a converged cluster. A gate that
// does not pass leaves the cluster as it is, returned with a
// *PartialError that is not complete: the apply fails and the cluster is
// recorded (a create taints it, so the next apply replaces it).
func (e *Env) gateAfterConverge(ctx context.Context, spec GPUClusterSpec, plan *GPUClusterPlan, c *cloud.GPUCluster, o GPUClusterOptions) (*GPUCluster, error) {
	if spec.Validation == nil {
		return gpuClusterFromCloud(c), nil
	}
	out, err := e.gateGPUCluster(ctx, spec, plan, c, o)
	if out != nil {
		out.ValidationProfile, out.ValidationBootstrap, out.SlurmControllerConfig = plan.Profile, plan.Bootstrap, plan.SlurmControllerConfig
	}
	if err != nil {
		return out, &PartialError{Err: err}
	}
	return out, nil
}

// newGate builds the gate: trusted certificates, account, zones.
func (e *Env) newGate(ctx context.Context, v ValidationSpec, profileText string) (*Gate, error) {
	pemText := v.TrustedCertificates
	if pemText == "" {
		pemText = e.TrustedCertificates
	}
	trusted, err := trustedCertificates(pemText, e.Region())
	if err != nil {
		return nil, err
	}
	account, err := cloud.CallerAccount(ctx, e.Clients.STS)
	if err != nil {
		return nil, err
	}
	byName, err := e.zoneIDsByName(ctx)
	if err != nil {
		return nil, err
	}
	return &Gate{Spec: v, ProfileSHA256: ProfileSHA256(profileText), Trusted: trusted, Region: e.Region(), AccountID: account, ZoneIDs: byName, Policy: e.Policy}, nil
}

// Bounds of what the gate reads of the reports prefix: it lists each node's
// own prefix (INSTANCE-ID/), from the node's launch on, at most
// MaxReportsPerNode objects (more fails the gate, naming the node), and
// reads at most MaxReportBodiesPerNode bodies of a node, newest first by
// what the store recorded, each at most cloud.MaxReportBytes: at most
// MaxReportBodiesPerNode MiB a node, whatever the bucket holds. The data
// source reads at most MaxReportNodes node prefixes.
const (
	MaxReportsPerNode      = 256
	MaxReportBodiesPerNode = 8
	MaxReportNodes         = 1000
)

// reportKeyRE is a report's key below its node's prefix: the time it was
// generated (ReportKeyTime).
var reportKeyRE = lazyRegexp(`^[0-9]{8}T[0-9]{6}Z\.json$`)

// readReports reads the reports of nodes under prefix, within the bounds
// above, the bodies not read before from cache (by key and ETag). Of a
// gate with a challenge it lists only what was written after the challenge
// was issued; of a gate that requires attestation it reads each report's
// attestation document too (counted in the bound of bodies).
func (e *Env) readReports(ctx context.Context, prefix string, g *Gate, nodes []ExpectedNode, cache map[string][]byte) ([]ReportObject, error) {
	owner := g.AccountID
	var out []ReportObject
	get := func(k cloud.ReportKey) ([]byte, error) {
		id := k.Key + "\x00" + k.ETag
		if body, ok := cache[id]; ok {
			return body, nil
		}
		body, err := cloud.GetReport(ctx, e.Clients.S3, prefix, k.Key, owner)
		if err == nil {
			cache[id] = body
		}
		return body, err
	}
	for _, n := range nodes {
		l := cloud.ReportListing{Max: MaxReportsPerNode, Owner: owner}
		since := n.LaunchTime
		if g.Issued.After(since) {
			since = g.Issued
		}
		if !since.IsZero() {
			// Keys name when the report was generated, which must be after
			// the launch (and the challenge): earlier keys are not this
			// launch's (or apply's).
			l.StartAfter = since.Add(-clockSkew).UTC().Format(ReportKeyTime)
		}
		keys, err := cloud.ListReports(ctx, e.Clients.S3, strings.TrimSuffix(prefix, "/")+"/"+n.InstanceID+"/", l)
		if err != nil {
			return nil, fmt.Errorf("node %d (%s): %w", n.Index, n.InstanceID, err)
		}
		attestations := map[string]cloud.ReportKey{}
		for _, k := range keys {
			if rel, ok := strings.CutSuffix(k.Rel, AttestationSuffix); ok {
				attestations[rel] = k
			}
		}
		// Only keys of the form hwprobe writes (TIME.json) are read: what
		// else lies there counts toward the bound and is not read.
		keys = slices.DeleteFunc(keys, func(k cloud.ReportKey) bool { return !reportKeyRE().MatchString(k.Rel) })
		slices.SortFunc(keys, func(a, b cloud.ReportKey) int { return b.LastModified.Compare(a.LastModified) })
		reads := 0
		for _, k := range keys {
			if reads >= MaxReportBodiesPerNode {
				break
			}
			body, err := get(k)
			if err != nil {
				return nil, err
			}
			reads++
			o := ReportObject{Key: n.InstanceID + "/" + k.Rel, LastModified: k.LastModified, Body: body}
			if a, ok := attestations[k.Rel]; ok && g.Attest && reads < MaxReportBodiesPerNode {
				if o.Attestation, err = get(a); err != nil {
					return nil, err
				}
				reads++
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// consoleTails reads the end of the missing nodes' console output, with a
// fresh bounded context (the gate's own may have expired).
func (e *Env) consoleTails(ctx context.Context, res GateResult) map[string]string {
	rctx, cancel := recordContext(ctx, RecordTimeout)
	defer cancel()
	out := map[string]string{}
	for _, n := range res.Nodes {
		if n.Status != NodeMissing {
			continue
		}
		if s, err := cloud.ConsoleTail(rctx, e.Clients.EC2, n.InstanceID, 20); err == nil {
			out[n.InstanceID] = s
		}
	}
	return out
}

func expectedNodes(c *GPUCluster) []ExpectedNode {
	var out []ExpectedNode
	for _, n := range c.Nodes {
		out = append(out, ExpectedNode{Index: n.Index, InstanceID: n.InstanceID, Zone: n.Zone, ZoneID: n.ZoneID, LaunchTime: n.LaunchTime})
	}
	slices.SortFunc(out, func(a, b ExpectedNode) int { return a.Index - b.Index })
	return out
}

// ValidationSummaries are the per-node lines of the last gate, by index.
func (c *GPUCluster) ValidationSummaries() map[int]NodeVerdict {
	out := map[int]NodeVerdict{}
	for _, v := range c.Validation {
		out[v.Index] = v
	}
	return out
}
