package pulumi

import (
	"context"
	"fmt"
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

// TestGpuCluster_slurmDrainedDrift: the Pulumi front end of a refresh that
// finds a node hwprobe drained in Slurm. The test writes the markers a
// node's health check writes (standing in for a node: no Slurm here; the
// real daemons run in the provider's TestAccGPUCluster_slurmReplace): node
// 0 drained then resumed, node 1 drained. With onFailure "replace", the
// read gives nodeCount one short, the diff is an update, and the update
// replaces node 1 alone (it never joined Slurm: nothing to wait for).
func TestGpuCluster_slurmDrainedDrift(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	s3c, key, secret := driftFixture(t, h, "slurm-drift", "munge-drift")
	s := newServer(t, h, nil)
	u := urn("GpuCluster", "drift")
	inputs := gpuClusterInputs("drift", 2, map[string]property.Value{
		"kmsKeyArn": property.New(key),
		"validation": property.New(property.NewMap(map[string]property.Value{
			"wait": property.New(false), "onFailure": property.New("replace"), "reportsS3Uri": property.New("s3://slurm-drift/r/"), "reportsKmsKeyArn": property.New(key)})),
		"orchestrator": property.New(property.NewMap(map[string]property.Value{
			"slurm": property.New(property.NewMap(map[string]property.Value{"controllers": strings_("slurmctld.internal"), "mungeKeySecretArn": property.New(secret)}))})),
	})
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	ids := nodeIDs(created.Properties)
	if len(ids) != 2 {
		t.Fatalf("nodes %v, want 2", ids)
	}
	marker := func(id, state, at, reason string) {
		body := fmt.Sprintf(`{"node":"drift-x","instance_id":%q,"state":%q,"at":%q`, id, state, at)
		if reason != "" {
			body += fmt.Sprintf(`,"reason":%q`, reason)
		}
		stamp := strings.NewReplacer("-", "", ":", "").Replace(strings.TrimSuffix(at, "Z")) + ".000Z"
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("slurm-drift"), Key: aws.String("r/drift/slurm-health/" + id + "/" + stamp + "." + state + ".json"),
			Body: strings.NewReader(body + "}")}); err != nil {
			t.Fatal(err)
		}
	}
	marker(ids[0], "drained", "2026-11-27T10:00:00Z", "hwprobe: gpu.temperature: 91 C")
	marker(ids[0], "resumed", "2026-11-27T10:05:00Z", "")
	marker(ids[1], "drained", "2026-11-27T10:01:00Z", "hwprobe: gpu.count: found 7 GPUs, profile expects 8")

	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if v := read.Inputs.Get("nodeCount"); !v.IsNumber() || v.AsNumber() != 1 {
		t.Fatalf("nodeCount read back %v, want 1: node 1 drained by hwprobe, node 0 resumed since", v)
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil || !diff.HasChanges || diff.DetailedDiff["nodeCount"].Kind != p.Update {
		t.Fatalf("diff: %v %+v, want nodeCount updated", err, diff)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	after := nodeIDs(updated.Properties)
	if len(after) != 2 || after[0] != ids[0] || after[1] == ids[1] {
		t.Fatalf("nodes %v after the update, want node 0 kept (%s) and node 1 replaced (was %s)", after, ids[0], ids[1])
	}
	if n := liveNodes(t, h, "drift"); n != 2 {
		t.Errorf("%d live nodes, want 2", n)
	}
	again, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: check.Inputs})
	if err != nil || again.Inputs.Get("nodeCount").AsNumber() != 2 {
		t.Errorf("read after the update: nodeCount %v, %v; want 2 (the new node has no marker)", again.Inputs.Get("nodeCount"), err)
	}
	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// nodeIDs are the instance ids of a GpuCluster's nodes, by index.
func nodeIDs(props property.Map) []string {
	var out []string
	for _, n := range props.Get("nodes").AsArray().AsSlice() {
		out = append(out, n.AsMap().Get("id").AsString())
	}
	return out
}

// TestCpuFootprint_slurmDrainedDrift: the Pulumi front end of a refresh
// that finds an instance of a footprint hwprobe drained in Slurm. The
// instances are played by the node player (the real hwprobe, the
// lifecycle double); the test writes the marker a node's health check
// writes (standing in for the node: no Slurm here; the real daemons run
// in the provider's TestAccCPUFootprint_slurmDrained). With onFailure
// "replace" the read marks the instance's validation result drained, the
// diff is an update of validationResults, and the update has Auto Scaling
// replace it: the new instance passes the gate.
func TestCpuFootprint_slurmDrainedDrift(t *testing.T) {
	const name = "fp-drift"
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	s3c, key, secret := driftFixture(t, h, "fp-drift", "munge-fp-drift")
	pl := acctest.NewFootprintPlayer(t, h)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); pl.WatchFootprint(wctx, name) }()
	t.Cleanup(func() { cancel(); <-done })

	s := newServer(t, h, nil)
	u := urn("CpuFootprint", name)
	inputs := property.NewMap(map[string]property.Value{
		"name": property.New(name), "instanceType": property.New("c7i.large"),
		"minSize": property.New(0.0), "maxSize": property.New(3.0), "desiredCapacity": property.New(2.0),
		"rootVolume": property.New(property.NewMap(map[string]property.Value{"sizeGib": property.New(20.0)})),
		"kmsKeyArn":  property.New(key),
		"validation": property.New(property.NewMap(map[string]property.Value{
			"checks": strings_("host", "cpu_features"), "timeout": property.New("5m"), "onFailure": property.New("replace"),
			"reportsS3Uri": property.New("s3://fp-drift/r/"), "reportsKmsKeyArn": property.New(key), "trustedCertificates": property.New(pl.Signer.CertPEM)})),
		"orchestrator": property.New(property.NewMap(map[string]property.Value{
			"slurm": property.New(property.NewMap(map[string]property.Value{"controllers": strings_("slurmctld.internal"), "mungeKeySecretArn": property.New(secret)}))})),
	})
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	results := func(props property.Map) map[string]string {
		out := map[string]string{}
		for _, r := range props.Get("validationResults").AsArray().AsSlice() {
			m := r.AsMap()
			out[m.Get("instanceId").AsString()] = m.Get("status").AsString()
		}
		return out
	}
	first := results(created.Properties)
	if len(first) != 2 {
		t.Fatalf("validation results %v, want 2 instances passed", first)
	}
	var drained string
	for id, st := range first {
		if st != "pass" {
			t.Fatalf("validation results %v, want 2 instances passed", first)
		}
		drained = max(drained, id)
	}
	body := fmt.Sprintf(`{"node":"fp-drift-%s","instance_id":%q,"state":"drained","at":"2026-11-27T10:00:00Z","reason":"hwprobe: cpu.feature avx512_fp16: avx512_fp16 not available"}`, drained, drained)
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fp-drift"), Key: aws.String("r/" + name + "/slurm-health/" + drained + "/20261127T100000.000Z.drained.json"),
		Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if got := results(read.Properties); got[drained] != "drained" || len(got) != 2 {
		t.Fatalf("validation results after the read %v, want %s drained", got, drained)
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil || !diff.HasChanges || diff.DetailedDiff["validationResults"].Kind != p.Update {
		t.Fatalf("diff: %v %+v, want validationResults updated", err, diff)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	after := results(updated.Properties)
	if _, ok := after[drained]; ok || len(after) != 2 {
		t.Fatalf("validation results after the update %v, want two that passed, %s replaced", after, drained)
	}
	for id, st := range after {
		if st != "pass" {
			t.Errorf("%s: %s after the update, want pass", id, st)
		}
	}
	if errs := pl.Errs(); len(errs) > 0 {
		t.Errorf("node player: %v", errs)
	}
	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// driftFixture makes what a drift test's resource needs in the emulator: a
// bucket for the reports, a customer managed key and a munge key secret
// encrypted with it; a fixture S3 client, the key's ARN and the secret's.
func driftFixture(t *testing.T, h *acctest.Harness, bucket, secretName string) (interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}, string, string) {
	t.Helper()
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	sec, err := acctest.SecretsManager(c).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(secretName), SecretString: aws.String(strings.Repeat("k", 32)), KmsKeyId: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return c.S3, key, aws.ToString(sec.ARN)
}
