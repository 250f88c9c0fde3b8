package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/acctest"
)

// orchestrator.slurm on both front ends: the munge key's secret is
// residency-checked at plan (its region, its KMS key), or at apply before
// the first write when its ARN is known only then; the controller's part,
// slurm_controller_config, is recorded. The nodes' side (hwprobe slurm
// join, slurmd) is not played here: the validation gate does not wait.

// mungeSecrets are one front end's run of a Slurm scenario: the munge key
// secrets its first step makes.
type mungeSecrets struct {
	mu sync.Mutex
	// outside is in eu-west-1; managed is in the region under Secrets
	// Manager's AWS managed key; cmk is in the region under a customer
	// managed key of the region, key.
	outside, managed, cmk, key string
}

// make creates the secrets (fixtures: not the front end's writes).
func (m *mungeSecrets) make(t *testing.T, h *acctest.Harness, _ *fixtures) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	eu, err := h.Clients(ctx, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("conformance munge key's key")})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	secret := func(c *secretsmanager.Client, name, kmsKey string) string {
		in := &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(strings.Repeat("munge-key-", 4))}
		if kmsKey != "" {
			in.KmsKeyId = aws.String(kmsKey)
		}
		out, err := c.CreateSecret(ctx, in)
		if err != nil {
			t.Fatalf("creating secret %s: %v", name, err)
		}
		return aws.ToString(out.ARN)
	}
	sm := acctest.SecretsManager(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.key = key
	m.outside = secret(acctest.SecretsManager(eu), "munge-eu", "")
	m.managed = secret(sm, "munge-managed", "")
	m.cmk = secret(sm, "munge-cmk", key)
}

// arn is the secret which names.
func (m *mungeSecrets) arn(which string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch which {
	case "outside":
		return m.outside
	case "managed":
		return m.managed
	}
	return m.cmk
}

// slurmBlock is orchestrator = { slurm = { ... } } with the secret
// munge, a value or unknown.
func slurmBlock(munge any) map[string]any {
	return map[string]any{"slurm": map[string]any{"controllers": []any{"slurmctld.internal"}, "munge_key_secret_arn": munge}}
}

// gpuSlurmInputs is gpuInputs with volumes under the customer managed key
// (the AE default), a validation block that does not wait (no node plays
// the gate here), and orchestrator.slurm with the secret which, known only
// at apply when atApply.
func (m *mungeSecrets) gpuSlurmInputs(name, which string, atApply bool) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		var munge any = m.arn(which)
		if atApply {
			munge = unknown{munge}
		}
		return gpuInputs(name, map[string]any{
			"kms_key_arn":  f.key,
			"validation":   map[string]any{"wait": false, "reports_s3_uri": "s3://" + uaeBucket + "/reports/", "reports_kms_key_arn": f.key},
			"orchestrator": slurmBlock(munge),
		})(f)
	}
}

// wantControllerConfig checks the recorded slurm_controller_config holds
// each of wants.
func wantControllerConfig(wants ...string) func(context.Context, *acctest.Harness, map[string]string) error {
	return func(_ context.Context, _ *acctest.Harness, outs map[string]string) error {
		got, ok := outs["slurm_controller_config"]
		if !ok {
			return fmt.Errorf("no slurm_controller_config recorded")
		}
		if m := missing(got, wants); len(m) > 0 {
			return fmt.Errorf("slurm_controller_config lacks %q:\n%s", m, got)
		}
		return nil
	}
}

const mungePath = "orchestrator.slurm.munge_key_secret_arn"

func slurmScenarios() []scenario {
	residencyRun, unknownRun, footprintRun := &mungeSecrets{}, &mungeSecrets{}, &mungeSecrets{}
	return []scenario{
		{
			name: "gpu_cluster/slurm munge secret outside the jurisdiction", kind: gpuCluster, resource: "conf-slurm",
			steps: []step{
				{name: "a secret in eu-west-1 refused at plan, zero writes", outOfBand: residencyRun.make, inputs: residencyRun.gpuSlurmInputs("conf-slurm", "outside", false),
					want: refused, messages: []string{"arn-region", "eu-west-1"}, paths: []string{mungePath}, noWrites: true},
				{name: "a secret under AWS's managed key refused under the AE default, zero writes", inputs: residencyRun.gpuSlurmInputs("conf-slurm", "managed", false),
					want: refused, messages: []string{"kms-customer-managed", "the secret's KMS key"}, paths: []string{mungePath}, noWrites: true},
				{name: "a secret under a customer managed key in the region: created", inputs: residencyRun.gpuSlurmInputs("conf-slurm", "cmk", false),
					want: created, check: wantNodes("conf-slurm", 1, "mec1-az1", ""),
					outputs: []string{"slurm_controller_config"}, checkOutputs: wantControllerConfig("Nodeset=conf-slurm Feature=conf-slurm", "GresTypes=gpu", "NodeName=conf-slurm-[0-")},
			},
		},
		{
			name: "gpu_cluster/slurm unknown secret", kind: gpuCluster, resource: "conf-slurm-unk",
			steps: []step{
				{name: "a secret in eu-west-1 known only at apply: refused at apply, zero writes", outOfBand: unknownRun.make, inputs: unknownRun.gpuSlurmInputs("conf-slurm-unk", "outside", true),
					want: refused, refusedAtApply: true, messages: []string{"arn-region", "eu-west-1"}, paths: []string{mungePath}, noWrites: true},
				{name: "a secret under a customer managed key known only at apply: created", inputs: unknownRun.gpuSlurmInputs("conf-slurm-unk", "cmk", true),
					want: created, check: wantNodes("conf-slurm-unk", 1, "mec1-az1", "")},
			},
		},
		{
			name: "cpu_footprint/slurm controller config", kind: cpuFootprint, resource: "conf-cpu-slurm", residency: awsManagedKeys,
			steps: []step{
				{name: "create: slurm_controller_config, known at plan, names the node set and hwprobe's health check", outOfBand: footprintRun.make, inputs: func(f *fixtures) map[string]any {
					return cpuInputs("conf-cpu-slurm", map[string]any{
						"validation":   map[string]any{"wait": false, "reports_s3_uri": "s3://" + uaeBucket + "/footprints/", "reports_kms_key_arn": f.key},
						"orchestrator": slurmBlock(footprintRun.arn("cmk")),
					})(f)
				}, want: created, outputs: []string{"slurm_controller_config"}, knownAtPlan: []string{"slurm_controller_config"},
					checkOutputs: wantControllerConfig("Nodeset=conf-cpu-slurm Feature=conf-cpu-slurm", "HealthCheckProgram=/usr/local/sbin/hwprobe-slurm-health-check")},
			},
		},
	}
}
