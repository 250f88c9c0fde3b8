package modules_test

import (
	"context"
	"encoding/base64"
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

// TestAccModules_gpuTrainingClusterKubernetes plans the
// gpu-training-cluster example with the module's kubernetes variable set:
// the module passes it to the resource's orchestrator.kubernetes, and the
// planned user data carries the kubeadm JoinConfiguration for the
// kubeconfig's server with the startup taint and the labels; beside eks,
// the module's precondition refuses it.
func TestAccModules_gpuTrainingClusterKubernetes(t *testing.T) {
	h := acctest.SetupSerial(t)
	keyARN := eksFixture(t, h, "uae-hwprobe-reports")
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	// The server is in moto's default VPC (172.31.0.0/16); its CA is the
	// test certificate.
	kubeconfig := "apiVersion: v1\nkind: Config\ncurrent-context: gate\nclusters:\n- name: c\n  cluster:\n    server: https://172.31.0.10:6443\n    certificate-authority-data: " +
		base64.StdEncoding.EncodeToString([]byte(testCertPEM(t))) + "\ncontexts:\n- name: gate\n  context: {cluster: c, user: gate}\nusers:\n- name: gate\n  user:\n    token: module-test-token\n"
	secret := func(name, value string) string {
		out, err := acctest.SecretsManager(c).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value), KmsKeyId: aws.String(keyARN)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	kubeSecret, tokenSecret := secret("kube/kubeconfig", kubeconfig), secret("kube/join-token", "abcdef.0123456789abcdef")
	dir := exampleDir(t, "gpu-training-cluster")
	override := `module "train" {
  kubernetes = {
    kubeconfig_secret_arn = "` + kubeSecret + `"
    join_token_secret_arn = "` + tokenSecret + `"
    labels                = { "example.com/team" = "vision" }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "kube_override.tf"), []byte(override), 0o600); err != nil {
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
	if attrs["orchestrator.kubernetes.kubeconfig_secret_arn"] != kubeSecret || attrs["orchestrator.kubernetes.join_token_secret_arn"] != tokenSecret {
		t.Errorf("planned orchestrator.kubernetes: %v", attrs)
	}
	parts, err := platform.ParseBootstrap(attrs["validation_bootstrap"])
	if err != nil || parts.KubeadmJoinConfig == "" || parts.KubeadmTokenSecretARN != tokenSecret {
		t.Fatalf("planned validation_bootstrap: %v, token secret %q", err, parts.KubeadmTokenSecretARN)
	}
	jc, err := platform.ParseKubeadmJoinConfig(parts.KubeadmJoinConfig)
	if err != nil {
		t.Fatal(err)
	}
	if jc.APIServerEndpoint != "172.31.0.10:6443" || len(jc.CACertHashes) != 1 || len(jc.Taints) != 1 || jc.Labels["example.com/team"] != "vision" ||
		jc.Labels[platform.EKSLabelCluster] != "uae-llm-train" || jc.Token != "" {
		t.Errorf("JoinConfiguration %+v", jc)
	}

	// Beside eks, the module refuses it.
	both := `module "train" {
  instance_profile = "` + moduleEKSProfile + `"
  eks = {
    cluster_name = "` + moduleEKSCluster + `"
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "eks_override.tf"), []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tf.run(append([]string{"plan", "-input=false", "-no-color"}, vars...)...)
	if err == nil || !strings.Contains(err.Error()+out, "more than one of slurm, eks and kubernetes") {
		t.Errorf("a plan with eks and kubernetes: %v\n%s", err, out)
	}
}
