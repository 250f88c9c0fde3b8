package modules_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/acctest"
)

// TestAccModules_gpuTrainingClusterSlurm plans the gpu-training-cluster
// example with the module's slurm variable set (an override file, as a
// user adds one): the module passes it to the resource's orchestrator
// block, and its slurm_controller_config output is known at plan; without
// validation the module's precondition refuses it.
func TestAccModules_gpuTrainingClusterSlurm(t *testing.T) {
	h := acctest.SetupSerial(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("uae-hwprobe-reports"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	sec, err := acctest.SecretsManager(c).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("slurm/munge"),
		SecretBinary: []byte(strings.Repeat("k", 64)), KmsKeyId: aws.String(keyARN)})
	if err != nil {
		t.Fatal(err)
	}
	dir := exampleDir(t, "gpu-training-cluster")
	override := `module "train" {
  slurm = {
    controllers          = ["10.0.0.10:6817"]
    munge_key_secret_arn = "` + aws.ToString(sec.ARN) + `"
    partition            = "gpu"
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "slurm_override.tf"), []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slurm_outputs.tf"), []byte("output \"slurm_controller_config\" {\n  value = module.train.slurm_controller_config\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, dir)
	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	vars := []string{"-var", "kms_key_arn=" + keyARN, "-var", "image=/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
		"-var", "reports_bucket=uae-hwprobe-reports", "-var", "trusted_certificates=" + testCertPEM(t), "-var", "wait_for_validation=false"}
	if _, err := tf.run(append([]string{"plan", "-input=false", "-no-color", "-out=tfplan"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	show, err := tf.run("show", "-json", "-no-color", "tfplan")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		PlannedValues struct {
			Outputs map[string]struct {
				Value any `json:"value"`
			} `json:"outputs"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal([]byte(show), &plan); err != nil {
		t.Fatal(err)
	}
	conf, _ := plan.PlannedValues.Outputs["slurm_controller_config"].Value.(string)
	for _, want := range []string{"Nodeset=uae-llm-train Feature=uae-llm-train", "PartitionName=gpu Nodes=uae-llm-train State=UP", "NodeName=uae-llm-train-[0-511] Name=gpu Type=h200 File=/dev/nvidia[0-7]"} {
		if !strings.Contains(conf, want) {
			t.Errorf("planned slurm_controller_config lacks %q:\n%s", want, conf)
		}
	}
	// Without validation (no reports bucket), the module refuses slurm.
	out, err := tf.run("plan", "-input=false", "-no-color", "-var", "kms_key_arn="+keyARN, "-var", "image=/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64")
	if err == nil || !strings.Contains(err.Error(), "slurm needs validation") {
		t.Errorf("a plan with slurm and no validation: %v\n%s", err, out)
	}
}

// testCertPEM is a certificate the configuration trusts (no node reports
// here: the plan only needs one).
func testCertPEM(t *testing.T) string {
	t.Helper()
	s, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s.CertPEM
}
