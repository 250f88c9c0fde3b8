package modules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/provider"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// providerAddress is the source address the modules and their examples
// declare.
const providerAddress = "registry.terraform.io/mlplatform/mlplatform"

// exampleDir copies the modules of this folder (their .tf files, examples
// included) into a scratch folder and returns the copy of module's
// examples/basic, so that the example runs as written: its module source
// "../.." and the composition's sources "../<module>" stay inside one tree
// (Terraform refuses a relative source that escapes an absolute one).
func exampleDir(t *testing.T, module string) string {
	t.Helper()
	src := filepath.Join(module, "examples", "basic")
	names, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no example in %s: %v", src, err)
	}
	calls := 0
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		calls += strings.Count(string(b), `source = "../.."`)
	}
	if calls == 0 {
		t.Fatalf("%s: no module call with source \"../..\"", src)
	}
	root := t.TempDir()
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".terraform":
			return filepath.SkipDir
		case d.IsDir() || filepath.Ext(path) != ".tf":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatalf("copying the modules: %v", err)
	}
	return filepath.Join(root, src)
}

// cli runs the real Terraform CLI (acctest.Setup finds it) in one folder,
// with the provider served from this test process (the reattach mode
// terraform-plugin-testing uses; its state checks do not support child
// modules, so the commands are run directly here).
type cli struct {
	t        *testing.T
	tf, dir  string
	reattach string
}

func newCLI(t *testing.T, dir string) *cli {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: acctest.Setup sets it")
	}
	return &cli{t: t, tf: tf, dir: dir, reattach: serveProvider(t)}
}

func (c *cli) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tf, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+c.reattach, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_CLI_ARGS=", "TF_LOG=")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("terraform %s: %w\n%s%s", args[0], err, out.String(), stderr.String())
	}
	return out.String(), err
}

// serveProvider serves the provider in this process until the test ends and
// returns TF_REATTACH_PROVIDERS for it.
func serveProvider(t *testing.T) string {
	t.Helper()
	// The provider's own SDK logs would fill the test's output.
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"} {
		t.Setenv(k, "OFF")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfgCh := make(chan *plugin.ReattachConfig, 1)
	closeCh := make(chan struct{})
	go func() {
		_ = tf6server.Serve(providerAddress, providerserver.NewProtocol6(provider.New("test")()),
			tf6server.WithDebug(ctx, cfgCh, closeCh), tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
	}()
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-cfgCh:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the provider server did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-closeCh:
		case <-time.After(10 * time.Second):
		}
	})
	b, err := json.Marshal(map[string]any{providerAddress: map[string]any{
		"Protocol": string(cfg.Protocol), "ProtocolVersion": cfg.ProtocolVersion, "Pid": cfg.Pid, "Test": true,
		"Addr": map[string]string{"Network": cfg.Addr.Network(), "String": cfg.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// liveNodes counts the cluster's instances that are not terminated.
func liveNodes(ec2c *ec2.Client, cluster string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := ec2c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:mlplatform:cluster"), Values: []string{cluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	if err != nil {
		return 0, fmt.Errorf("describing instances: %w", err)
	}
	n := 0
	for _, r := range out.Reservations {
		n += len(r.Instances)
	}
	return n, nil
}

// TestAccModules_gpuTrainingCluster applies modules/gpu-training-cluster's
// example against the emulator through the real Terraform CLI (init, apply,
// show, output, destroy): two p5en.48xlarge nodes in mec1-az1 with the
// module's defaults for H200 nodes. It checks what exists in EC2, the
// resource's attributes and the outputs, loads the hwprobe profile the
// module renders with hwprobe's own loader, and checks that destroy leaves
// no node behind.
func TestAccModules_gpuTrainingCluster(t *testing.T) {
	h := acctest.SetupSerial(t)
	c, err := h.Clients(context.Background(), acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	const reports = "uae-hwprobe-reports"
	if _, err := c.S3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(reports),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, exampleDir(t, "gpu-training-cluster"))
	// moto does not publish the Deep Learning AMI parameter, the example's
	// default image: take a public parameter it has. No node is played here,
	// so the gate bootstraps the nodes without waiting (the gate itself is
	// tested with played nodes in the provider's TestAccGPUCluster_validation*).
	vars := []string{"-var", "kms_key_arn=" + keyARN, "-var", "image=/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
		"-var", "reports_bucket=" + reports, "-var", "trusted_certificates=" + signer.CertPEM, "-var", "wait_for_validation=false"}

	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	if _, err := tf.run(append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
		t.Fatal(err)
	}

	if n, err := liveNodes(acctest.EC2(c), "uae-llm-train"); err != nil || n != 2 {
		t.Errorf("want 2 live nodes in EC2, found %d (%v)", n, err)
	}

	show, err := tf.run("show", "-json", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	attrs := moduleResource(t, show, "module.train", "module.train.mlplatform_gpu_cluster.this")
	want := map[string]string{
		"node_count": "2", "placement_zone_id": "mec1-az1", "placement_group_name": "mlplatform-uae-llm-train",
		"efa_interfaces": "16", "kms_key_arn": keyARN,
		"root_volume.size_gib": "500", "data_volumes.0.size_gib": "4000", "data_volumes.0.throughput": "1000",
		"data_volumes.0.iops": "16000", "rollout.strategy": "launch_first",
		"validation.on_failure": "replace", "validation.timeout": "30m", "validation.max_replacements": "2",
		"validation.reports_s3_uri": "s3://" + reports + "/clusters/",
		"tags_all.owner":            "ml-platform", "tags_all.workload": "pretraining",
	}
	for k, v := range want {
		if got := attrs[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(attrs["validation_bootstrap"], "hwprobe\" validate --profile") {
		t.Errorf("validation_bootstrap has no hwprobe validate step:\n%s", attrs["validation_bootstrap"])
	}
	if !regexp.MustCompile(`^ami-`).MatchString(attrs["image_id"]) {
		t.Errorf("image_id = %q", attrs["image_id"])
	}

	outJSON, err := tf.run("output", "-json", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	var outputs map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(outJSON), &outputs); err != nil {
		t.Fatalf("terraform output -json: %v\n%s", err, outJSON)
	}
	if got := outputs["gpus"].Value; got != "16 x H200" {
		t.Errorf("output gpus = %v, want 16 x H200", got)
	}
	if ips, _ := outputs["private_ips"].Value.([]any); len(ips) != 2 {
		t.Errorf("output private_ips = %v, want 2 addresses", outputs["private_ips"].Value)
	}
	src, _ := outputs["hwprobe_profile"].Value.(string)
	if err := checkProfile(src); err != nil {
		t.Error(err)
	}

	if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	if n, err := liveNodes(acctest.EC2(c), "uae-llm-train"); err != nil || n != 0 {
		t.Errorf("%d nodes of uae-llm-train left after destroy (%v)", n, err)
	}
}

// moduleResource finds a resource of a child module in `terraform show
// -json` and flattens its values to "a.b.0.c" keys.
func moduleResource(t *testing.T, show, module, address string) map[string]string {
	t.Helper()
	type res struct {
		Address string         `json:"address"`
		Values  map[string]any `json:"values"`
	}
	var st struct {
		Values struct {
			RootModule struct {
				ChildModules []struct {
					Address   string `json:"address"`
					Resources []res  `json:"resources"`
				} `json:"child_modules"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(show), &st); err != nil {
		t.Fatalf("terraform show -json: %v", err)
	}
	for _, m := range st.Values.RootModule.ChildModules {
		if m.Address != module {
			continue
		}
		for _, r := range m.Resources {
			if r.Address == address {
				flat := map[string]string{}
				flatten("", r.Values, flat)
				return flat
			}
		}
	}
	t.Fatalf("%s not in the state:\n%s", address, show)
	return nil
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(join(prefix, k), e, out)
		}
	case []any:
		for i, e := range x {
			flatten(join(prefix, fmt.Sprint(i)), e, out)
		}
	case nil:
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// checkProfile loads the module's hwprobe_profile output (the provider's
// validation_profile) with hwprobe's profile loader, as a node would, and
// checks what it declares: the cluster's place and type, the p5en's GPUs and
// EFA interfaces from the catalog, and the benchmarks the module adds.
func checkProfile(src string) error {
	p, diags := profile.Load("hwprobe_profile.hcl", []byte(src))
	if diags.HasErrors() {
		return fmt.Errorf("the rendered profile does not load: %s\n%s", diags.Error(), src)
	}
	effs := map[string]float64{}
	for _, b := range p.Benchmarks {
		if b.MinEfficiency != nil {
			effs[b.Name] = *b.MinEfficiency
		}
	}
	switch {
	case p.Host == nil || p.Host.Region != "me-central-1" || !slices.Contains(p.Host.ZoneIDs, "mec1-az1") || slices.Contains(p.Host.ZoneIDs, "mec1-az2") || p.Host.InstanceType != "p5en.48xlarge":
		return fmt.Errorf("host block %+v\n%s", p.Host, src)
	case p.GPU == nil || p.GPU.Model != "H200" || p.GPU.Count != 8 || p.GPU.MinNVLinkLinks != 18 || p.GPU.MinMemoryGiB < 130:
		return fmt.Errorf("gpu block %+v\n%s", p.GPU, src)
	case p.EFA == nil || p.EFA.Count != 16:
		return fmt.Errorf("efa block %+v\n%s", p.EFA, src)
	case len(p.Benchmarks) != 2 || effs["gpu_gemm_bf16"] != 0.6 || effs["gpu_nccl_allreduce_busbw"] != 0.6:
		return fmt.Errorf("benchmarks %+v\n%s", p.Benchmarks, src)
	}
	return nil
}

// TestAccModules_featureStore applies modules/feature-store's example against
// the emulator through the real Terraform CLI, then adds a feature through
// the features variable: the group is updated in place (same ARN, same
// creation time), never replaced. Destroy deletes the group.
func TestAccModules_featureStore(t *testing.T) {
	h := acctest.SetupSerial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	const bucket = "uae-feature-store"
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, exampleDir(t, "feature-store"))
	vars := []string{"-var", "kms_key_arn=" + aws.ToString(key.KeyMetadata.Arn), "-var", "offline_bucket=" + bucket,
		"-var", "role_arn=arn:aws:iam::123456789012:role/feature-store"}
	more := append(slices.Clone(vars), "-var", `features=[{name="age",type="Integral"},{name="country",type="String"},{name="lifetime_value",type="Fractional"},{name="churn_score",type="Fractional"}]`)

	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, more...)...); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	const group = "module.customers.mlplatform_feature_store.this"
	state := func() map[string]string {
		show, err := tf.run("show", "-json", "-no-color")
		if err != nil {
			t.Fatal(err)
		}
		return moduleResource(t, show, "module.customers", group)
	}
	if _, err := tf.run(append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	before := state()
	want := map[string]string{
		"name": "customers", "status": "Created", "record_identifier_feature_name": "record_id",
		"event_time_feature_name": "event_time", "offline_store.table_format": "Iceberg",
		"offline_store.s3_uri":   "s3://" + bucket + "/feature-store/customers",
		"online_store.ttl.value": "90", "online_store.ttl.unit": "Days", "tags_all.team": "risk", "tags_all.owner": "ml-platform",
	}
	for k, v := range want {
		if before[k] != v {
			t.Errorf("%s = %q, want %q", k, before[k], v)
		}
	}
	if n := countPrefix(before, "features."); n != 5 {
		t.Errorf("%d features, want 5 (3 from the variable, the identifier and the event time)", n)
	}

	plan, err := tf.run(append([]string{"plan", "-input=false", "-no-color"}, more...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "1 to change, 0 to destroy") {
		t.Fatalf("adding a feature should be an in-place update:\n%s", plan)
	}
	if _, err := tf.run(append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, more...)...); err != nil {
		t.Fatal(err)
	}
	after := state()
	if after["arn"] != before["arn"] || after["creation_time"] != before["creation_time"] {
		t.Errorf("the group was replaced: arn %s -> %s, created %s -> %s", before["arn"], after["arn"], before["creation_time"], after["creation_time"])
	}
	if n := countPrefix(after, "features."); n != 6 {
		t.Errorf("%d features after the update, want 6", n)
	}

	if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, more...)...); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	if _, err := c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String("customers")}); err == nil {
		t.Error("feature group customers still exists after destroy")
	}
}

// countPrefix counts the distinct list elements under prefix ("features.0.name" ...).
func countPrefix(flat map[string]string, prefix string) int {
	seen := map[string]bool{}
	for k := range flat {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			i, _, _ := strings.Cut(rest, ".")
			seen[i] = true
		}
	}
	return len(seen)
}

// applyExample runs init and apply of a module example with vars, and
// registers a destroy for the end of the test unless the test destroyed it
// itself (destroy sets *destroyed).
func applyExample(t *testing.T, tf *cli, vars []string) (destroy func()) {
	t.Helper()
	if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	destroyed := false
	destroy = func() {
		t.Helper()
		if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
			t.Fatal(err)
		}
		destroyed = true
	}
	t.Cleanup(func() {
		if !destroyed {
			if _, err := tf.run(append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	if _, err := tf.run(append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	return destroy
}

// outputs reads `terraform output -json` into name -> value.
func (c *cli) outputs() map[string]any {
	c.t.Helper()
	out, err := c.run("output", "-json", "-no-color")
	if err != nil {
		c.t.Fatal(err)
	}
	var raw map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		c.t.Fatalf("terraform output -json: %v\n%s", err, out)
	}
	vals := map[string]any{}
	for k, v := range raw {
		vals[k] = v.Value
	}
	return vals
}

// groupExists says whether the Auto Scaling group exists, and how many
// scheduled actions it has.
func groupExists(c *cloud.Clients, name string) (bool, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		return false, 0, fmt.Errorf("describing auto scaling groups: %w", err)
	}
	if len(out.AutoScalingGroups) == 0 {
		return false, 0, nil
	}
	acts, err := c.AutoScaling.DescribeScheduledActions(ctx, &autoscaling.DescribeScheduledActionsInput{AutoScalingGroupName: aws.String(name)})
	if err != nil {
		return true, 0, fmt.Errorf("describing scheduled actions: %w", err)
	}
	return true, len(acts.ScheduledUpdateGroupActions), nil
}

// endpointStatus returns the endpoint's status and ARN, or "" when it does
// not exist.
func endpointStatus(c *cloud.Clients, name string) (status, arn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		return "", ""
	}
	return string(out.EndpointStatus), aws.ToString(out.EndpointArn)
}

// TestAccModules_smbInference applies modules/smb-inference's example
// against the emulator through the real Terraform CLI: the footprint's Auto
// Scaling group exists with the off-hours window's two scheduled actions
// (start and end), the serverless endpoint is in service with the ARN the
// module outputs, the type chosen meets the example's requirements and the
// scheduled monthly cost is below the unscheduled one. Destroy removes the
// group and the endpoint.
func TestAccModules_smbInference(t *testing.T) {
	h := acctest.SetupSerial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	tf := newCLI(t, exampleDir(t, "smb-inference"))
	vars := []string{"-var", "kms_key_arn=" + aws.ToString(key.KeyMetadata.Arn),
		"-var", "endpoint_image=123456789012.dkr.ecr.me-central-1.amazonaws.com/smb-model:1",
		"-var", "execution_role_arn=arn:aws:iam::123456789012:role/serving"}
	destroy := applyExample(t, tf, vars)

	const group = "mlplatform-cpu-smb-inference"
	if ok, acts, err := groupExists(c, group); err != nil || !ok || acts != 2 {
		t.Errorf("group %s: exists %v, %d scheduled actions (want 2: the window and its end), %v", group, ok, acts, err)
	}
	status, arn := endpointStatus(c, "smb-inference")
	if status != "InService" {
		t.Errorf("endpoint smb-inference status %q, want InService", status)
	}

	out := tf.outputs()
	if got := out["endpoint_arn"]; got != arn || arn == "" {
		t.Errorf("output endpoint_arn = %v, SageMaker says %q", got, arn)
	}
	fp, _ := out["footprint"].(map[string]any)
	typ, _ := fp["type"].(string)
	if !regexp.MustCompile(`^[a-z][a-z0-9-]*\.(x?large|[0-9]+xlarge)$`).MatchString(typ) {
		t.Errorf("footprint type = %q", typ)
	}
	if why, _ := fp["why"].(string); why == "" {
		t.Error("footprint why is empty")
	}
	monthly, _ := fp["monthly_usd"].(float64)
	sched, _ := fp["monthly_sched_usd"].(float64)
	if !(monthly > 0 && sched > 0 && sched < monthly) {
		t.Errorf("monthly cost %v, with the off-hours schedule %v: want 0 < scheduled < unscheduled", monthly, sched)
	}
	t.Logf("chose %s (%v): %.2f USD a month, %.2f with the off-hours schedule", typ, fp["why"], monthly, sched)

	show, err := tf.run("show", "-json", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	attrs := moduleResource(t, show, "module.smb", "module.smb.mlplatform_cpu_footprint.this")
	for k, v := range map[string]string{"schedule.0.time_zone": "Asia/Dubai", "schedule.0.recurrence": "0 20 * * 1-5",
		"schedule.0.duration": "11h", "schedule.0.desired_capacity": "0", "root_volume.size_gib": "30",
		"desired_capacity": "2", "tags_all.owner": "smb-team", "tags_all.workload": "inference"} {
		if attrs[k] != v {
			t.Errorf("footprint %s = %q, want %q", k, attrs[k], v)
		}
	}
	ep := moduleResource(t, show, "module.smb", "module.smb.mlplatform_serving_endpoint.this")
	if ep["variants.0.serverless.memory_size_mb"] != "2048" || ep["variants.0.instance_type"] != "" {
		t.Errorf("endpoint variant: serverless memory %q, instance type %q; want a 2048 MB serverless variant",
			ep["variants.0.serverless.memory_size_mb"], ep["variants.0.instance_type"])
	}

	// The gate, planned on the applied example: with a reports bucket the
	// module passes a validation block with cpu_sgemm to the footprint, whose
	// profile is rendered at plan and loads with hwprobe's loader as an
	// instance would load it. (The gate itself, with instances played by the
	// real hwprobe, is the provider's TestAccCPUFootprint_validation*.)
	const reports = "smb-hwprobe-reports"
	bctx, bcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer bcancel()
	if _, err := c.S3.CreateBucket(bctx, &s3.CreateBucketInput{Bucket: aws.String(reports),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	gate := append(slices.Clone(vars), "-var", "reports_bucket="+reports, "-var", "trusted_certificates="+signer.CertPEM, "-var", "wait_for_validation=false")
	if _, err := tf.run(append([]string{"plan", "-input=false", "-no-color", "-out=gate.tfplan"}, gate...)...); err != nil {
		t.Fatal(err)
	}
	planJSON, err := tf.run("show", "-json", "-no-color", "gate.tfplan")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		PlannedValues json.RawMessage `json:"planned_values"`
	}
	if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
		t.Fatalf("terraform show -json gate.tfplan: %v", err)
	}
	planned := moduleResource(t, `{"values":`+string(plan.PlannedValues)+`}`, "module.smb", "module.smb.mlplatform_cpu_footprint.this")
	for k, v := range map[string]string{"validation.on_failure": "replace", "validation.timeout": "20m",
		"validation.reports_s3_uri": "s3://" + reports + "/footprints/", "validation.benchmarks.0.name": "cpu_sgemm"} {
		if planned[k] != v {
			t.Errorf("planned footprint %s = %q, want %q", k, planned[k], v)
		}
	}
	p, diags := profile.Load("hwprobe_profile.hcl", []byte(planned["validation_profile"]))
	switch {
	case diags.HasErrors():
		t.Errorf("the planned profile does not load: %s\n%s", diags.Error(), planned["validation_profile"])
	case p.Host == nil || p.Host.Region != "me-central-1" || p.Host.InstanceType != typ || slices.Contains(p.Host.ZoneIDs, "mec1-az2"):
		t.Errorf("planned profile host %+v, want me-central-1, %s, not mec1-az2", p.Host, typ)
	case len(p.Benchmarks) != 1 || p.Benchmarks[0].Name != "cpu_sgemm" || p.Benchmarks[0].MinEfficiency == nil || *p.Benchmarks[0].MinEfficiency != 0.5:
		t.Errorf("planned profile benchmarks %+v, want cpu_sgemm at 0.5", p.Benchmarks)
	}

	destroy()
	if ok, _, err := groupExists(c, group); err != nil || ok {
		t.Errorf("group %s still exists after destroy (%v)", group, err)
	}
	if status, _ := endpointStatus(c, "smb-inference"); status != "" {
		t.Errorf("endpoint smb-inference still exists after destroy (%s)", status)
	}
}

// TestAccModules_uaeMLPlatform applies modules/uae-ml-platform's example
// against the emulator through the real Terraform CLI: the residency guard
// passes on every location (region, both buckets, the key, the image), the
// feature group, the inference footprint's Auto Scaling group and the
// ml.m5.large endpoint with its data capture in the UAE exist, every
// resource carries the required tags, and no training node is launched
// (training is off by default); a plan with training on adds the cluster and
// replaces nothing. Destroy removes all of it.
// TestAccModules_smbInferenceEndpointKey: the module gives the endpoint
// its key on a type without instance storage (and serverless), and none on
// an ml.g6 endpoint, whose local NVMe storage SageMaker encrypts in
// hardware (a key there fails the plan); the captures keep the key. Both
// plan under jurisdiction AE's default (customer managed keys required).
func TestAccModules_smbInferenceEndpointKey(t *testing.T) {
	h := acctest.SetupSerial(t) // the examples reach the emulator through AWS_ENDPOINT_URL
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	keyARN := aws.ToString(key.KeyMetadata.Arn)
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("smb-captures"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ typ, volumeKey string }{{"ml.m5.large", keyARN}, {"ml.g6.xlarge", ""}} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := exampleDir(t, "smb-inference")
			p := filepath.Join(dir, "main.tf")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			const from = "  endpoint_image     = var.endpoint_image\n"
			if !strings.Contains(string(b), from) {
				t.Fatalf("the example has no %q", from)
			}
			to := from + fmt.Sprintf("  endpoint_instance_type = %q\n  data_capture_s3_uri = \"s3://smb-captures/x\"\n", tc.typ)
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), from, to, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			tf := newCLI(t, dir)
			if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
				t.Fatal(err)
			}
			if _, err := tf.run("plan", "-input=false", "-no-color", "-out=ep.tfplan", "-var", "kms_key_arn="+keyARN,
				"-var", "endpoint_image=123456789012.dkr.ecr.me-central-1.amazonaws.com/smb-model:1",
				"-var", "execution_role_arn=arn:aws:iam::123456789012:role/serving"); err != nil {
				t.Fatalf("plan: %v", err)
			}
			planJSON, err := tf.run("show", "-json", "-no-color", "ep.tfplan")
			if err != nil {
				t.Fatal(err)
			}
			var plan struct {
				PlannedValues json.RawMessage `json:"planned_values"`
			}
			if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
				t.Fatal(err)
			}
			ep := moduleResource(t, `{"values":`+string(plan.PlannedValues)+`}`, "module.smb", "module.smb.mlplatform_serving_endpoint.this")
			if ep["variants.0.instance_type"] != tc.typ || ep["kms_key_arn"] != tc.volumeKey || ep["data_capture.kms_key_arn"] != keyARN {
				t.Errorf("endpoint: type %q, kms_key_arn %q, data_capture.kms_key_arn %q; want %s, %q, the key",
					ep["variants.0.instance_type"], ep["kms_key_arn"], ep["data_capture.kms_key_arn"], tc.typ, tc.volumeKey)
			}
		})
	}
}

func TestAccModules_uaeMLPlatform(t *testing.T) {
	h := acctest.SetupSerial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	const dataBucket, captureBucket = "uae-ml-data", "uae-ml-capture"
	for _, b := range []string{dataBucket, captureBucket} {
		if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b),
			CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
			t.Fatal(err)
		}
	}
	tf := newCLI(t, exampleDir(t, "uae-ml-platform"))
	vars := []string{"-var", "kms_key_arn=" + aws.ToString(key.KeyMetadata.Arn),
		"-var", "data_bucket=" + dataBucket, "-var", "capture_bucket=" + captureBucket,
		"-var", "endpoint_image=123456789012.dkr.ecr.me-central-1.amazonaws.com/uae-model:1",
		"-var", "feature_store_role_arn=arn:aws:iam::123456789012:role/feature-store",
		"-var", "serving_role_arn=arn:aws:iam::123456789012:role/serving"}
	start := time.Now()
	destroy := applyExample(t, tf, vars)
	t.Logf("init and apply: %s", time.Since(start).Round(time.Second))

	const group, endpoint, features = "mlplatform-cpu-uae-ml-inference", "uae-ml-inference", "uae-ml-features"
	if ok, acts, err := groupExists(c, group); err != nil || !ok || acts != 2 {
		t.Errorf("group %s: exists %v, %d scheduled actions (want 2), %v", group, ok, acts, err)
	}
	status, arn := endpointStatus(c, endpoint)
	if status != "InService" {
		t.Errorf("endpoint %s status %q, want InService", endpoint, status)
	}
	if _, err := c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String(features)}); err != nil {
		t.Errorf("feature group %s: %v", features, err)
	}
	if n, err := liveNodes(acctest.EC2(c), "uae-ml-train"); err != nil || n != 0 {
		t.Errorf("%d training nodes with training off (%v)", n, err)
	}

	out := tf.outputs()
	res, _ := out["residency"].(map[string]any)
	if res["jurisdiction"] != "AE" || res["region"] != "me-central-1" || res["mode"] != "enforce" || res["compliant"] != true {
		t.Errorf("output residency = %v", res)
	}
	checked, _ := res["checked"].([]any)
	for _, want := range []string{"region me-central-1: pass", "s3_uri s3://" + dataBucket + "/: pass",
		"s3_uri s3://" + captureBucket + "/uae-ml-inference: pass", "ecr_image 123456789012.dkr.ecr.me-central-1.amazonaws.com/uae-model:1: pass"} {
		if !slices.Contains(checked, any(want)) {
			t.Errorf("the guard's report has no %q: %v", want, checked)
		}
	}
	inf, _ := out["inference"].(map[string]any)
	if inf["endpoint_arn"] != arn || arn == "" || inf["endpoint_kind"] != "1 x ml.m5.large" || inf["asg_name"] != group {
		t.Errorf("output inference = %v (SageMaker's ARN %q)", inf, arn)
	}
	if m, s := inf["monthly_cost_usd"].(float64), inf["monthly_cost_scheduled_usd"].(float64); !(s > 0 && s < m) {
		t.Errorf("monthly cost %v, scheduled %v: want 0 < scheduled < unscheduled", m, s)
	}
	if out["training"] != nil {
		t.Errorf("output training = %v, want null", out["training"])
	}
	t.Logf("inference: %v %v (%v), %v USD a month, %v with the off-hours schedule", inf["instance_type"], inf["endpoint_kind"],
		inf["decision_reason"], inf["monthly_cost_usd"], inf["monthly_cost_scheduled_usd"])

	show, err := tf.run("show", "-json", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{"tags_all.owner": "ml-platform", "tags_all.cost-center": "ai-research",
		"tags_all.data-classification": "confidential", "tags_all.platform": "uae-ml"}
	for _, r := range []struct{ module, address string }{
		{"module.platform.module.features", "module.platform.module.features.mlplatform_feature_store.this"},
		{"module.platform.module.inference", "module.platform.module.inference.mlplatform_cpu_footprint.this"},
		{"module.platform.module.inference", "module.platform.module.inference.mlplatform_serving_endpoint.this"},
	} {
		attrs := nestedModuleResource(t, show, r.module, r.address)
		for k, v := range required {
			if attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", r.address, k, attrs[k], v)
			}
		}
		if strings.HasSuffix(r.address, "serving_endpoint.this") {
			if got := attrs["data_capture.destination_s3_uri"]; got != "s3://"+captureBucket+"/uae-ml-inference" {
				t.Errorf("data capture destination %q", got)
			}
		}
	}

	// Turning training on plans the cluster behind the guard, which now
	// also checks the training zone; nothing else changes. The default
	// image, the Deep Learning AMI's public parameter, is the shim's
	// (acctest.RegisterSSMPublicParameters).
	plan, err := tf.run(append([]string{"plan", "-input=false", "-no-color", "-var", "training_enabled=true"}, vars...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"module.platform.module.training[0].mlplatform_gpu_cluster.this will be created", `"mec1-az1"`, "Plan: 1 to add, "} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan with training on has no %q:\n%s", want, plan)
		}
	}
	for _, not := range []string{"mlplatform_feature_store.this must be replaced", "mlplatform_cpu_footprint.this must be replaced", "mlplatform_serving_endpoint.this must be replaced"} {
		if strings.Contains(plan, not) {
			t.Errorf("turning training on: %s", not)
		}
	}

	destroy()
	if ok, _, err := groupExists(c, group); err != nil || ok {
		t.Errorf("group %s still exists after destroy (%v)", group, err)
	}
	if status, _ := endpointStatus(c, endpoint); status != "" {
		t.Errorf("endpoint %s still exists after destroy (%s)", endpoint, status)
	}
	if _, err := c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String(features)}); err == nil {
		t.Errorf("feature group %s still exists after destroy", features)
	}
}

// nestedModuleResource finds a resource of a module at any depth in
// `terraform show -json` and flattens its values.
func nestedModuleResource(t *testing.T, show, module, address string) map[string]string {
	t.Helper()
	type mod struct {
		Address   string `json:"address"`
		Resources []struct {
			Address string         `json:"address"`
			Values  map[string]any `json:"values"`
		} `json:"resources"`
		ChildModules []json.RawMessage `json:"child_modules"`
	}
	var st struct {
		Values struct {
			RootModule mod `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(show), &st); err != nil {
		t.Fatalf("terraform show -json: %v", err)
	}
	var find func(m mod) map[string]string
	find = func(m mod) map[string]string {
		if m.Address == module {
			for _, r := range m.Resources {
				if r.Address == address {
					flat := map[string]string{}
					flatten("", r.Values, flat)
					return flat
				}
			}
		}
		for _, raw := range m.ChildModules {
			var c mod
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	if f := find(st.Values.RootModule); f != nil {
		return f
	}
	t.Fatalf("%s not in the state:\n%s", address, show)
	return nil
}

// TestAccModules_uaeMLPlatformRefuses plans modules/uae-ml-platform's
// example with one thing wrong at a time through the real Terraform CLI:
// each plan fails with its reason and the provider makes no AWS write call.
func TestAccModules_uaeMLPlatformRefuses(t *testing.T) {
	h := acctest.SetupSerial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("module example key")})
	if err != nil {
		t.Fatal(err)
	}
	for b, region := range map[string]string{"uae-ml-data": acctest.Region, "uae-ml-capture": acctest.Region, "eu-capture": "eu-west-1"} {
		fc, err := h.Clients(ctx, region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fc.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b),
			CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}}); err != nil {
			t.Fatal(err)
		}
	}
	vars := func(capture string) []string {
		return []string{"plan", "-input=false", "-no-color", "-var", "kms_key_arn=" + aws.ToString(key.KeyMetadata.Arn),
			"-var", "data_bucket=uae-ml-data", "-var", "capture_bucket=" + capture,
			"-var", "endpoint_image=123456789012.dkr.ecr.me-central-1.amazonaws.com/uae-model:1",
			"-var", "feature_store_role_arn=arn:aws:iam::123456789012:role/feature-store",
			"-var", "serving_role_arn=arn:aws:iam::123456789012:role/serving"}
	}
	for _, tc := range []struct {
		name, from, to, capture string
		want                    *regexp.Regexp
	}{
		{name: "auditMode", from: `mode                          = "enforce"`, to: `mode                          = "audit"`, capture: "uae-ml-capture",
			want: regexp.MustCompile(`residency mode is audit`)},
		{name: "serverlessCapture", from: `endpoint_instance_type = "ml.m5.large"`, to: `endpoint_instance_type = null`, capture: "uae-ml-capture",
			want: regexp.MustCompile(`data capture needs an instance variant`)},
		{name: "captureOutsideUAE", capture: "eu-capture",
			want: regexp.MustCompile(`(?s)Residency violation.*s3_uris\[1\].*eu-capture`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := exampleDir(t, "uae-ml-platform")
			if tc.from != "" {
				p := filepath.Join(dir, "main.tf")
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), tc.from) {
					t.Fatalf("the example has no %q", tc.from)
				}
				if err := os.WriteFile(p, []byte(strings.Replace(string(b), tc.from, tc.to, 1)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tf := newCLI(t, dir)
			if _, err := tf.run("init", "-input=false", "-no-color"); err != nil {
				t.Fatal(err)
			}
			before := len(h.Shim.Writes())
			_, err := tf.run(vars(tc.capture)...)
			if err == nil {
				t.Fatal("the plan succeeded")
			}
			if msg := strings.Join(strings.Fields(err.Error()), " "); !tc.want.MatchString(msg) {
				t.Fatalf("the plan failed without %s:\n%v", tc.want, err)
			}
			if w := h.Shim.Writes(); len(w) != before {
				t.Errorf("%d AWS write calls during a refused plan: %v", len(w)-before, w[before:])
			}
		})
	}
}
