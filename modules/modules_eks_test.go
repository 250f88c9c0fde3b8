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

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The EKS cluster the module examples join, and the nodes' instance
// profile (its role gets the cluster's EC2_LINUX access entry).
const (
	moduleEKSCluster = "ml-prod"
	moduleEKSProfile = "eks-nodes"
)

// eksFixture makes what a plan with the modules' eks variable reads: a
// customer managed key, the reports bucket, the EKS cluster (moto's,
// ACTIVE at once) and the nodes' instance profile with its role. It
// returns the key's ARN.
func eksFixture(t *testing.T, h *acctest.Harness, bucket string) string {
	t.Helper()
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	if err := h.CreateEKSCluster(ctx, moduleEKSCluster); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateInstanceProfile(ctx, moduleEKSProfile); err != nil {
		t.Fatal(err)
	}
	return aws.ToString(key.KeyMetadata.Arn)
}

// plannedModuleResource finds a resource of a child module in the planned
// values of `terraform show -json PLAN`, flattened as moduleResource
// flattens the state's.
func plannedModuleResource(t *testing.T, show, module, address string) map[string]string {
	t.Helper()
	var plan struct {
		PlannedValues json.RawMessage `json:"planned_values"`
	}
	if err := json.Unmarshal([]byte(show), &plan); err != nil {
		t.Fatalf("terraform show -json: %v", err)
	}
	return moduleResource(t, `{"values":`+string(plan.PlannedValues)+`}`, module, address)
}

// checkEKSBootstrap reads the planned user data back as a node would: the
// nodeadm NodeConfig names the cluster, registers the node with the
// startup taint and the labels, and the bootstrap publishes to the Node
// and installs the Kubernetes health check.
func checkEKSBootstrap(t *testing.T, userData string, labels map[string]string) {
	t.Helper()
	parts, err := platform.ParseBootstrap(userData)
	if err != nil {
		t.Fatalf("planned validation_bootstrap: %v", err)
	}
	if parts.EKSNodeConfig == "" {
		t.Fatalf("planned validation_bootstrap has no NodeConfig part:\n%s", userData)
	}
	nc, err := platform.ParseEKSNodeConfig(parts.EKSNodeConfig)
	if err != nil {
		t.Fatal(err)
	}
	if nc.ClusterName != moduleEKSCluster || nc.Endpoint == "" || nc.CertificateAuthority == "" {
		t.Errorf("NodeConfig: cluster %q at %q (CA %d bytes), want %s with its endpoint and CA", nc.ClusterName, nc.Endpoint, len(nc.CertificateAuthority), moduleEKSCluster)
	}
	if len(nc.Taints) != 1 || nc.Taints[0].Key+"="+nc.Taints[0].Value+":"+nc.Taints[0].Effect != platform.EKSStartupTaint {
		t.Errorf("NodeConfig taints %+v, want only %s", nc.Taints, platform.EKSStartupTaint)
	}
	for k, v := range labels {
		if nc.Labels[k] != v {
			t.Errorf("NodeConfig label %s = %q, want %q (labels %v)", k, nc.Labels[k], v, nc.Labels)
		}
	}
	for _, want := range []string{"kube publish", "mlplatform-hwprobe-kube.service"} {
		if !strings.Contains(parts.Script, want) {
			t.Errorf("bootstrap script lacks %q", want)
		}
	}
}

// TestAccModules_gpuTrainingClusterEKS plans the gpu-training-cluster
// example with the module's eks variable set (an override file, as a user
// adds one): the module passes it to the resource's orchestrator.eks, and
// the planned user data registers each node with the startup taint and the
// labels; without validation the module's precondition refuses it.
func TestAccModules_gpuTrainingClusterEKS(t *testing.T) {
	h := acctest.SetupSerial(t)
	keyARN := eksFixture(t, h, "uae-hwprobe-reports")
	dir := exampleDir(t, "gpu-training-cluster")
	override := `module "train" {
  instance_profile = "` + moduleEKSProfile + `"
  eks = {
    cluster_name = "` + moduleEKSCluster + `"
    labels       = { "example.com/team" = "vision" }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "eks_override.tf"), []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, dir)
	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	image := "-var=image=/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
	vars := []string{"-var", "kms_key_arn=" + keyARN, image,
		"-var", "reports_bucket=uae-hwprobe-reports", "-var", "trusted_certificates=" + testCertPEM(t), "-var", "wait_for_validation=false"}
	if _, err := tf.run(append([]string{"plan", "-input=false", "-no-color", "-out=tfplan"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	show, err := tf.run("show", "-json", "-no-color", "tfplan")
	if err != nil {
		t.Fatal(err)
	}
	attrs := plannedModuleResource(t, show, "module.train", "module.train.mlplatform_gpu_cluster.this")
	for k, v := range map[string]string{"orchestrator.eks.cluster_name": moduleEKSCluster, "orchestrator.eks.labels.example.com/team": "vision",
		"orchestrator.eks.create_access_entry": "true", "instance_profile": moduleEKSProfile} {
		if attrs[k] != v {
			t.Errorf("planned %s = %q, want %q", k, attrs[k], v)
		}
	}
	if _, ok := attrs["orchestrator.slurm.partition"]; ok {
		t.Errorf("planned orchestrator.slurm is set: %v", attrs)
	}
	checkEKSBootstrap(t, attrs["validation_bootstrap"], map[string]string{platform.EKSLabelCluster: "uae-llm-train",
		platform.EKSLabelResource: "gpu-cluster", platform.EKSLabelInstance: "p5en.48xlarge", "example.com/team": "vision"})

	// Without validation (no reports bucket), the module refuses eks.
	out, err := tf.run("plan", "-input=false", "-no-color", "-var", "kms_key_arn="+keyARN, image)
	if err == nil || !strings.Contains(err.Error(), "eks needs validation") {
		t.Errorf("a plan with eks and no validation: %v\n%s", err, out)
	}
}

// TestAccModules_smbInferenceEKS plans the smb-inference example with the
// module's eks variable set: the footprint's planned user data registers
// each instance with the startup taint and the labels.
func TestAccModules_smbInferenceEKS(t *testing.T) {
	h := acctest.SetupSerial(t)
	keyARN := eksFixture(t, h, "smb-hwprobe-reports")
	dir := exampleDir(t, "smb-inference")
	override := `module "smb" {
  instance_profile = "` + moduleEKSProfile + `"
  eks = {
    cluster_name = "` + moduleEKSCluster + `"
    labels       = { "example.com/tier" = "inference" }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "eks_override.tf"), []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, dir)
	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	vars := []string{"-var", "kms_key_arn=" + keyARN,
		"-var", "endpoint_image=123456789012.dkr.ecr.me-central-1.amazonaws.com/smb-model:1",
		"-var", "execution_role_arn=arn:aws:iam::123456789012:role/serving"}
	withValidation := append(vars, "-var", "reports_bucket=smb-hwprobe-reports", "-var", "trusted_certificates="+testCertPEM(t), "-var", "wait_for_validation=false")
	if _, err := tf.run(append([]string{"plan", "-input=false", "-no-color", "-out=tfplan"}, withValidation...)...); err != nil {
		t.Fatal(err)
	}
	show, err := tf.run("show", "-json", "-no-color", "tfplan")
	if err != nil {
		t.Fatal(err)
	}
	attrs := plannedModuleResource(t, show, "module.smb", "module.smb.mlplatform_cpu_footprint.this")
	for k, v := range map[string]string{"orchestrator.eks.cluster_name": moduleEKSCluster, "orchestrator.eks.labels.example.com/tier": "inference",
		"orchestrator.eks.create_access_entry": "true"} {
		if attrs[k] != v {
			t.Errorf("planned %s = %q, want %q", k, attrs[k], v)
		}
	}
	checkEKSBootstrap(t, attrs["validation_bootstrap"], map[string]string{platform.EKSLabelCluster: "smb-inference",
		platform.EKSLabelResource: "cpu-footprint", "example.com/tier": "inference"})

	out, err := tf.run(append([]string{"plan", "-input=false", "-no-color"}, vars...)...)
	if err == nil || !strings.Contains(err.Error(), "eks needs validation") {
		t.Errorf("a plan with eks and no validation: %v\n%s", err, out)
	}
}
