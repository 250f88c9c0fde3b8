package pulumi

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input reaches the core as the Terraform front end's
// orchestrator block does: the same spec, the same unknown paths.
func TestSlurmSpec(t *testing.T) {
	full := &Orchestrator{Slurm: &OrchestratorSlurm{Controllers: []string{"ctl:6817", ""}, MungeKeySecretARN: "arn:aws:secretsmanager:me-central-1:111122223333:secret:munge",
		Partition: ptr("gpu"), Features: []string{"a100", ""}, NodeNamePrefix: ptr("train")}}
	for _, tc := range []struct {
		name    string
		in      *Orchestrator
		unknown []string
		want    *platform.SlurmSpec
	}{
		{"none", nil, nil, nil},
		{"orchestrator without slurm", &Orchestrator{}, nil, nil},
		{"orchestrator unknown as a whole", nil, []string{"orchestrator"}, &platform.SlurmSpec{}},
		{"slurm unknown as a whole", &Orchestrator{}, []string{"orchestrator.slurm"}, &platform.SlurmSpec{}},
		{"known", full, nil, &platform.SlurmSpec{Controllers: []string{"ctl:6817", ""}, MungeKeySecretARN: "arn:aws:secretsmanager:me-central-1:111122223333:secret:munge",
			Partition: "gpu", Features: []string{"a100", ""}, NodeNamePrefix: "train"}},
		{"lists with an unknown element are unknown", full, []string{"orchestrator.slurm.controllers", "orchestrator.slurm.controllers[1]", "orchestrator.slurm.features", "orchestrator.slurm.features[1]"},
			&platform.SlurmSpec{MungeKeySecretARN: "arn:aws:secretsmanager:me-central-1:111122223333:secret:munge", Partition: "gpu", NodeNamePrefix: "train"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slurmSpec(tc.in, tc.unknown); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("slurmSpec = %+v, want %+v", got, tc.want)
			}
		})
	}
	// The GPU cluster's and the footprint's spec carry it with the unknown
	// paths the core reads (orchestrator.slurm.<attr>, snake_case).
	in := property.NewMap(map[string]property.Value{"orchestrator": property.New(property.NewMap(map[string]property.Value{
		"slurm": property.New(property.NewMap(map[string]property.Value{
			"controllers":       strings_("ctl"),
			"mungeKeySecretArn": property.New(property.Computed),
			"nodeNamePrefix":    property.New(property.Computed),
		})),
	}))})
	u := wholeListUnknowns(in)
	args := GpuClusterArgs{Orchestrator: &Orchestrator{Slurm: &OrchestratorSlurm{Controllers: []string{"ctl"}}}}
	s := args.spec(u)
	if s.Slurm == nil || s.Known("orchestrator.slurm.munge_key_secret_arn") || s.Known("orchestrator.slurm.node_name_prefix") || !s.Known("orchestrator.slurm.controllers") {
		t.Errorf("GPU cluster spec: Slurm %+v, unknown %q", s.Slurm, s.Unknown)
	}
	f := CpuFootprintArgs{Orchestrator: args.Orchestrator}.spec(u)
	if f.Slurm == nil || f.Known("orchestrator.slurm.munge_key_secret_arn") || !f.Known("orchestrator.slurm.controllers") {
		t.Errorf("CPU footprint spec: Slurm %+v, unknown %q", f.Slurm, f.Unknown)
	}
}

// Check refuses a munge key's secret outside the jurisdiction, and one
// encrypted with Secrets Manager's AWS managed key where customer managed
// keys are required, on orchestrator.slurm.mungeKeySecretArn; it accepts a
// secret under a customer managed key in the region, and leaves a secret
// ARN not known yet to the apply. Slurm without the validation input is
// refused on orchestrator.slurm.
func TestGpuCluster_checkSlurm(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("slurm-reports"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	secret := func(name, kmsKey string) string {
		in := &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(strings.Repeat("k", 32))}
		if kmsKey != "" {
			in.KmsKeyId = aws.String(kmsKey)
		}
		out, err := acctest.SecretsManager(c).CreateSecret(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	managed, cmk := secret("munge-managed", ""), secret("munge-cmk", key)
	h.Shim.ResetLog()

	s := newServer(t, h, nil)
	validation := property.New(property.NewMap(map[string]property.Value{
		"wait": property.New(false), "reportsS3Uri": property.New("s3://slurm-reports/r/"), "reportsKmsKeyArn": property.New(key)}))
	inputs := func(arn property.Value, withValidation bool) property.Map {
		extra := map[string]property.Value{"kmsKeyArn": property.New(key), "orchestrator": property.New(property.NewMap(map[string]property.Value{
			"slurm": property.New(property.NewMap(map[string]property.Value{"controllers": strings_("slurmctld.internal"), "mungeKeySecretArn": arn}))}))}
		if withValidation {
			extra["validation"] = validation
		}
		return gpuClusterInputs("slurm", 1, extra)
	}
	const path = "orchestrator.slurm.mungeKeySecretArn"
	for _, tc := range []struct {
		name           string
		inputs         property.Map
		property, want string // want "": no failure
	}{
		{"secret outside the jurisdiction", inputs(property.New("arn:aws:secretsmanager:eu-west-1:123456789012:secret:munge-AbCdEf"), true), path, "arn-region"},
		{"AWS managed key", inputs(property.New(managed), true), path, "kms-customer-managed"},
		{"customer managed key", inputs(property.New(cmk), true), "", ""},
		{"not known yet", inputs(property.New(property.Computed), true), "", ""},
		{"no validation", inputs(property.New(cmk), false), "orchestrator.slurm", "needs the validation block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, err := s.Check(p.CheckRequest{Urn: urn("GpuCluster", "slurm"), Inputs: tc.inputs})
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
				found = found || (f.Property == tc.property || strings.Contains(f.Reason, tc.property)) && strings.Contains(f.Reason, tc.want)
			}
			if !found {
				t.Errorf("failures = %+v, want one on %s containing %q", check.Failures, tc.property, tc.want)
			}
		})
	}

	// The preview knows slurmControllerConfig when its inputs are known, as
	// Terraform's plan does; not before.
	for _, tc := range []struct {
		name  string
		arn   property.Value
		known bool
	}{{"known inputs", property.New(cmk), true}, {"secret ARN not known yet", property.New(property.Computed), false}} {
		t.Run("preview with "+tc.name, func(t *testing.T) {
			u := urn("GpuCluster", "slurm")
			check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs(tc.arn, true)})
			if err != nil || len(check.Failures) > 0 {
				t.Fatalf("check: %v %+v", err, check.Failures)
			}
			preview, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			v, ok := preview.Properties.GetOk("slurmControllerConfig")
			switch {
			case !tc.known && ok && !v.IsComputed():
				t.Errorf("slurmControllerConfig = %v, want unknown", v)
			case tc.known && (!ok || !v.IsString() || !strings.Contains(v.AsString(), "Nodeset=slurm Feature=slurm")):
				t.Errorf("slurmControllerConfig = %v, want the rendered configuration", v)
			}
		})
	}
	assertNoWrites(t, h)
}
