package pulumi

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input's eks reaches the core as the Terraform front
// end's orchestrator.eks does: the same spec, the same unknown paths.
func TestEKSSpec(t *testing.T) {
	full := &Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod", Labels: map[string]string{"team.example.com/owner": "vision", "tier": ""}}}
	for _, tc := range []struct {
		name    string
		in      *Orchestrator
		unknown []string
		want    *platform.EKSSpec
	}{
		{"none", nil, nil, nil},
		{"orchestrator without eks", &Orchestrator{}, nil, nil},
		{"orchestrator with slurm", &Orchestrator{Slurm: &OrchestratorSlurm{}}, nil, nil},
		// slurmSpec reads it, as the Terraform front end's slurmSpecFrom.
		{"orchestrator unknown as a whole", nil, []string{"orchestrator"}, nil},
		{"eks unknown as a whole", &Orchestrator{}, []string{"orchestrator.eks"}, &platform.EKSSpec{}},
		{"known", full, nil, &platform.EKSSpec{ClusterName: "ml-prod", Labels: map[string]string{"team.example.com/owner": "vision", "tier": ""}, CreateAccessEntry: true}},
		{"createAccessEntry false", &Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod", CreateAccessEntry: ptr(false)}}, nil,
			&platform.EKSSpec{ClusterName: "ml-prod"}},
		{"cluster name unknown", &Orchestrator{EKS: &OrchestratorEKS{Labels: map[string]string{"tier": "a"}}}, []string{"orchestrator.eks.cluster_name"},
			&platform.EKSSpec{Labels: map[string]string{"tier": "a"}, CreateAccessEntry: true}},
		{"labels unknown as a whole", &Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod"}}, []string{"orchestrator.eks.labels"},
			&platform.EKSSpec{ClusterName: "ml-prod", CreateAccessEntry: true}},
		// infer decodes the unknown value as "": it is left out, never a
		// label holding "".
		{"a label value unknown", full, []string{"orchestrator.eks.labels.team.example.com/owner"},
			&platform.EKSSpec{ClusterName: "ml-prod", Labels: map[string]string{"tier": ""}, CreateAccessEntry: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eksSpec(tc.in, tc.unknown); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("eksSpec = %+v, want %+v", got, tc.want)
			}
		})
	}

	// The GPU cluster's and the footprint's spec carry it with the unknown
	// paths the core reads, as Terraform lists them: orchestrator,
	// orchestrator.eks, orchestrator.eks.cluster_name, and
	// orchestrator.eks.labels for a label value not known yet (never a
	// path under it).
	eks := func(fields map[string]property.Value) property.Map {
		return property.NewMap(map[string]property.Value{"orchestrator": property.New(property.NewMap(map[string]property.Value{
			"eks": property.New(property.NewMap(fields)),
		}))})
	}
	computed := property.New(property.Computed)
	for _, tc := range []struct {
		name    string
		inputs  property.Map
		args    *Orchestrator
		eks     *platform.EKSSpec // the GPU cluster's and the footprint's
		unknown []string          // of the spec, under orchestrator
	}{
		{"orchestrator unknown", property.NewMap(map[string]property.Value{"orchestrator": computed}), nil, nil, []string{"orchestrator"}},
		{"eks unknown", property.NewMap(map[string]property.Value{"orchestrator": property.New(property.NewMap(map[string]property.Value{"eks": computed}))}),
			&Orchestrator{}, &platform.EKSSpec{}, []string{platform.EKSPath}},
		{"cluster name unknown", eks(map[string]property.Value{"clusterName": computed}),
			&Orchestrator{EKS: &OrchestratorEKS{}}, &platform.EKSSpec{CreateAccessEntry: true}, []string{platform.EKSPath + ".cluster_name"}},
		{"labels unknown", eks(map[string]property.Value{"clusterName": property.New("ml-prod"), "labels": computed}),
			&Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod"}}, &platform.EKSSpec{ClusterName: "ml-prod", CreateAccessEntry: true}, []string{platform.EKSPath + ".labels"}},
		{"a label value unknown", eks(map[string]property.Value{"clusterName": property.New("ml-prod"), "labels": property.New(property.NewMap(map[string]property.Value{
			"team.example.com/Owner": computed, "tier": property.New("gpu")}))}),
			&Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod", Labels: map[string]string{"team.example.com/Owner": "", "tier": "gpu"}}},
			&platform.EKSSpec{ClusterName: "ml-prod", Labels: map[string]string{"tier": "gpu"}, CreateAccessEntry: true}, []string{platform.EKSPath + ".labels"}},
		{"createAccessEntry unknown", eks(map[string]property.Value{"clusterName": property.New("ml-prod"), "createAccessEntry": computed}),
			&Orchestrator{EKS: &OrchestratorEKS{ClusterName: "ml-prod"}}, &platform.EKSSpec{ClusterName: "ml-prod", CreateAccessEntry: true}, []string{platform.EKSPath + ".create_access_entry"}},
	} {
		t.Run("spec with "+tc.name, func(t *testing.T) {
			u := wholeListUnknowns(tc.inputs)
			under := func(unknown []string) []string {
				var out []string
				for _, p := range unknown {
					if p == "orchestrator" || strings.HasPrefix(p, "orchestrator.") {
						out = append(out, p)
					}
				}
				return out
			}
			g := GpuClusterArgs{Orchestrator: tc.args, Validation: &GpuValidation{}}.spec(u)
			if !reflect.DeepEqual(g.EKS, tc.eks) || !reflect.DeepEqual(under(g.Unknown), tc.unknown) {
				t.Errorf("GPU cluster spec: EKS %+v, unknown %q; want %+v, %q", g.EKS, under(g.Unknown), tc.eks, tc.unknown)
			}
			f := CpuFootprintArgs{Orchestrator: tc.args, Validation: &GpuValidation{}}.spec(u)
			if !reflect.DeepEqual(f.EKS, tc.eks) || !reflect.DeepEqual(under(f.Unknown), tc.unknown) {
				t.Errorf("CPU footprint spec: EKS %+v, unknown %q; want %+v, %q", f.EKS, under(f.Unknown), tc.eks, tc.unknown)
			}
			// Unknown is never missing: the core's validation skips it.
			onOrchestrator := func(p platform.Problem) bool { return strings.HasPrefix(p.Path, "orchestrator") }
			if ps := platform.ValidateGPUCluster(g, g.Unknown); slices.ContainsFunc(ps, onOrchestrator) {
				t.Errorf("ValidateGPUCluster: %+v", ps)
			}
			if ps := platform.ValidateCPUFootprint(f, f.Unknown); slices.ContainsFunc(ps, onOrchestrator) {
				t.Errorf("ValidateCPUFootprint: %+v", ps)
			}
		})
	}
}

// Check runs the core's orchestrator.eks checks on both resources and
// reports them on the Pulumi property paths of the Terraform attribute
// paths (orchestrator.eks.labels["k8s.io/x"], orchestrator.eks.clusterName);
// values not known yet (the orchestrator, eks, the cluster name, a label
// value) are left to the apply: no failure at preview. Nothing is written.
func TestCheckEKS(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("eks-reports"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	if err := h.CreateEKSCluster(ctx, "ml-prod"); err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()

	s := newServer(t, h, nil)
	computed := property.New(property.Computed)
	validation := property.New(property.NewMap(map[string]property.Value{
		"wait": property.New(false), "reportsS3Uri": property.New("s3://eks-reports/r/"), "reportsKmsKeyArn": property.New(key)}))
	eks := func(clusterName property.Value, labels map[string]property.Value) property.Value {
		m := map[string]property.Value{"clusterName": clusterName, "createAccessEntry": property.New(false)}
		if labels != nil {
			m["labels"] = property.New(property.NewMap(labels))
		}
		return property.New(property.NewMap(m))
	}
	orchestrator := func(fields map[string]property.Value) property.Value {
		return property.New(property.NewMap(fields))
	}
	known := orchestrator(map[string]property.Value{"eks": eks(property.New("ml-prod"), map[string]property.Value{"team.example.com/owner": property.New("vision")})})
	resources := []struct {
		typ    string
		inputs func(orchestrator property.Value, withValidation bool) property.Map
	}{
		{"GpuCluster", func(o property.Value, withValidation bool) property.Map {
			extra := map[string]property.Value{"kmsKeyArn": property.New(key), "orchestrator": o}
			if withValidation {
				extra["validation"] = validation
			}
			return gpuClusterInputs("eks", 1, extra)
		}},
		{"CpuFootprint", func(o property.Value, withValidation bool) property.Map {
			m := map[string]property.Value{
				"name": property.New("eks"), "instanceType": property.New("c7i.large"),
				"minSize": property.New(1.0), "maxSize": property.New(2.0), "desiredCapacity": property.New(1.0),
				"rootVolume": property.New(property.NewMap(map[string]property.Value{"sizeGib": property.New(20.0)})),
				"kmsKeyArn":  property.New(key), "orchestrator": o,
			}
			if withValidation {
				m["validation"] = validation
			}
			return property.NewMap(m)
		}},
	}
	for _, r := range resources {
		for _, tc := range []struct {
			name           string
			orchestrator   property.Value
			noValidation   bool
			property, want string // want "": no failure
		}{
			{"known", known, false, "", ""},
			{"orchestrator not known yet", computed, false, "", ""},
			{"eks not known yet", orchestrator(map[string]property.Value{"eks": computed}), false, "", ""},
			{"cluster name not known yet", orchestrator(map[string]property.Value{"eks": eks(computed, nil)}), false, "", ""},
			// The labels are checked together, at apply, as Terraform
			// does: a bad one beside a value not known yet too.
			{"a label value not known yet", orchestrator(map[string]property.Value{"eks": eks(property.New("ml-prod"), map[string]property.Value{
				"team.example.com/owner": computed, "k8s.io/x": property.New("y")})}), false, "", ""},
			{"label under kubernetes.io", orchestrator(map[string]property.Value{"eks": eks(property.New("ml-prod"), map[string]property.Value{"kubernetes.io/x": property.New("y")})}), false,
				`orchestrator.eks.labels["kubernetes.io/x"]`, "Invalid node label"},
			{"label under k8s.io", orchestrator(map[string]property.Value{"eks": eks(property.New("ml-prod"), map[string]property.Value{"k8s.io/x": property.New("y")})}), false,
				`orchestrator.eks.labels["k8s.io/x"]`, "the k8s.io prefix is not the user's"},
			{"bad cluster name", orchestrator(map[string]property.Value{"eks": eks(property.New("-ml prod"), nil)}), false,
				"orchestrator.eks.clusterName", "Invalid EKS cluster name"},
			{"cluster not found", orchestrator(map[string]property.Value{"eks": eks(property.New("no-such-cluster"), nil)}), false,
				"orchestrator.eks.clusterName", "EKS cluster not found"},
			{"no validation", known, true, "orchestrator.eks", "EKS needs the validation block"},
			{"slurm and eks", orchestrator(map[string]property.Value{"eks": eks(property.New("ml-prod"), nil),
				"slurm": property.New(property.NewMap(map[string]property.Value{"controllers": strings_("slurmctld.internal"), "mungeKeySecretArn": computed}))}), false,
				"orchestrator", "Two orchestrators"},
			// createAccessEntry defaults to true, as Terraform's
			// create_access_entry: the nodes' role is the instance
			// profile's. (The CPU footprint's plan does not read the
			// access entry yet.)
			{"access entry without an instance profile", orchestrator(map[string]property.Value{"eks": property.New(property.NewMap(map[string]property.Value{
				"clusterName": property.New("ml-prod")}))}), false, "instanceProfile", "No instance profile for the EKS nodes"},
		} {
			if r.typ != "GpuCluster" && tc.property == "instanceProfile" {
				continue
			}
			t.Run(r.typ+"/"+tc.name, func(t *testing.T) {
				check, err := s.Check(p.CheckRequest{Urn: urn(r.typ, "eks"), Inputs: r.inputs(tc.orchestrator, !tc.noValidation)})
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				if tc.want == "" {
					if len(check.Failures) > 0 {
						t.Errorf("failures = %+v, want none", check.Failures)
					}
					return
				}
				found := false
				for _, f := range check.Failures {
					found = found || f.Property == tc.property && strings.Contains(f.Reason, tc.want)
				}
				if !found {
					t.Errorf("failures = %+v, want one on %s containing %q", check.Failures, tc.property, tc.want)
				}
			})
		}
	}
	assertNoWrites(t, h)
}
