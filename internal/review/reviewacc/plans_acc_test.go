// Package reviewacc_test produces plan JSON with the real Terraform CLI
// against the AWS emulator and reviews it: the create, in-place update,
// replace, destroy and audit-mode residency scenarios of the mlplatform
// provider, and, when a local mirror of hashicorp/aws is available, plans
// with resources of the AWS provider. With -update it also refreshes the
// committed plans in ../testdata/plans that the golden tests read.
package reviewacc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/review"
)

var update = flag.Bool("update", false, "rewrite ../testdata/plans with the plans produced here")

func TestMain(m *testing.M) { acctest.Main(m) }

const providerVersion = "0.1.0"

// tfWork is a Terraform working directory wired to a locally built
// mlplatform provider (and, optionally, a local mirror of other providers).
type tfWork struct {
	t   *testing.T
	tf  string
	dir string
	env []string
}

// newWork copies the configuration in dir (relative to this package) into
// a fresh working directory.
func newWork(t *testing.T, configDir string, otherMirror string) *tfWork {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: acctest.Setup must run first")
	}
	root := t.TempDir()
	mirror := filepath.Join(root, "mirror")
	bin := filepath.Join(mirror, "registry.terraform.io", "mlplatform", "mlplatform", providerVersion, runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-mlplatform_v"+providerVersion)
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version="+providerVersion, "github.com/mlplatform/mlplatform")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["mlplatform/mlplatform"]
  }
`, mirror)
	if otherMirror != "" {
		rc += fmt.Sprintf(`  filesystem_mirror {
    path    = %q
    include = ["hashicorp/aws"]
  }
`, otherMirror)
	}
	rc += "  direct {\n    exclude = [\"mlplatform/mlplatform\", \"hashicorp/aws\"]\n  }\n}\n"
	rcPath := filepath.Join(root, "terraformrc")
	if err := os.WriteFile(rcPath, []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "config")
	if err := os.CopyFS(dir, os.DirFS(configDir)); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rcPath, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1", "TF_PLUGIN_CACHE_DIR=")
	return &tfWork{t: t, tf: tf, dir: dir, env: env}
}

func (w *tfWork) run(args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.tf, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("terraform %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// plan plans with args, saves the plan file and returns `terraform show -json`.
func (w *tfWork) plan(name string, args ...string) []byte {
	w.t.Helper()
	w.run(append([]string{"plan", "-no-color", "-out=" + name + ".tfplan"}, args...)...)
	js := w.run("show", "-json", name+".tfplan")
	return []byte(js)
}

// keep writes the plan to ../testdata/plans with -update.
func keep(t *testing.T, name string, plan []byte) {
	t.Helper()
	if !*update {
		return
	}
	var v any
	if err := json.Unmarshal(plan, &v); err != nil {
		t.Fatalf("plan %s is not JSON: %v", name, err)
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "testdata", "plans", name+".json"), append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func reviewOf(t *testing.T, plan []byte, rules string) *review.Report {
	t.Helper()
	p, err := review.ParsePlan(plan)
	if err != nil {
		t.Fatalf("parsing the plan: %v", err)
	}
	rs, err := review.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	r, err := review.Review(context.Background(), p, review.Options{FailOn: rs})
	if err != nil {
		t.Fatalf("reviewing: %v", err)
	}
	return r
}

func createBucket(t *testing.T, h *acctest.Harness, name, region string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
	}
	if _, err := c.S3.CreateBucket(ctx, in); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// createKey creates a customer managed key in region, for the examples
// that jurisdiction AE's default asks one of.
func createKey(t *testing.T, h *acctest.Harness, region string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("review acceptance test key")})
	if err != nil {
		t.Fatalf("creating key in %s: %v", region, err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

func gpu(r *review.Report, model string) review.GPUModel {
	for _, g := range r.GPUs.Models {
		if g.Model == model {
			return g
		}
	}
	return review.GPUModel{}
}

func destroyOf(r *review.Report, addr string) *review.Destroy {
	for i := range r.Destructive {
		if r.Destructive[i].Address == addr {
			return &r.Destructive[i]
		}
	}
	return nil
}

func TestAccReviewPlans_platform(t *testing.T) {
	h := acctest.SetupSerial(t) // the examples reach the emulator through AWS_ENDPOINT_URL
	createBucket(t, h, "review-data", acctest.Region)
	w := newWork(t, filepath.Join("..", "testdata", "terraform", "platform"), "")
	w.run("init", "-no-color")

	// create
	js := w.plan("create")
	keep(t, "platform-create", js)
	r := reviewOf(t, js, "")
	if r.Summary.Create != 4 || r.Summary.Delete != 0 {
		t.Errorf("create: summary %+v, want 4 creates", r.Summary)
	}
	if g := gpu(r, "H200"); g.Delta != 16 || g.HoursDelta != 16*platform.HoursPerMonth {
		t.Errorf("create: H200 %+v, want +16 GPUs and %v GPU-hours", g, 16*platform.HoursPerMonth)
	}
	if !r.Residency.Evaluated || r.Residency.Jurisdiction != "AE" || r.Residency.Mode != "enforce" {
		t.Errorf("create: residency %+v, want AE enforce from the plan", r.Residency)
	}
	if n := r.Residency.Counts[review.VerdictOutside]; n != 0 {
		t.Errorf("create: %d locations outside, want none: %+v", n, r.Residency.Locations)
	}
	if r.Cost.Complete {
		t.Errorf("create: p5en.48xlarge has no me-central-1 price in the catalog, so the cost cannot be complete: %+v", r.Cost)
	}
	if len(r.Destructive) != 0 || r.Validation.Declared {
		t.Errorf("create: destructive %+v, validation %+v; want none", r.Destructive, r.Validation)
	}
	// residency violation in audit mode: the plan succeeds with warnings,
	// the review says outside. Planned on the empty state, like create.
	js = w.plan("audit", "-var", "residency_mode=audit", "-var", "offline_kms_key_arn=arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", "-var", `guard_regions=["eu-west-1"]`)
	keep(t, "platform-audit", js)
	r = reviewOf(t, js, "residency")
	if r.Residency.Mode != "audit" || r.Residency.Counts[review.VerdictOutside] < 2 {
		t.Errorf("audit: residency %+v, want audit mode and at least 2 locations outside", r.Residency)
	}
	if r.Policy.Passed {
		t.Errorf("audit: --fail-on residency passed with locations outside")
	}

	w.run("apply", "-no-color", "-auto-approve", "create.tfplan")

	// in-place update: scale 2 -> 3 nodes, add a feature
	js = w.plan("update", "-var", "gpu_nodes=3", "-var", `extra_features=[{name="segment",type="String"}]`)
	keep(t, "platform-update", js)
	r = reviewOf(t, js, "destroy")
	if r.Summary.Update < 2 || r.Summary.Replace != 0 || r.Summary.Delete != 0 {
		t.Errorf("update: summary %+v, want in-place updates only", r.Summary)
	}
	if g := gpu(r, "H200"); g.Before != 16 || g.After != 24 || g.Delta != 8 {
		t.Errorf("update: H200 %+v, want 16 -> 24", g)
	}
	if !r.Policy.Passed {
		t.Errorf("update: --fail-on destroy failed on an in-place update: %+v", r.Policy)
	}

	// replace: a new cluster name and a retyped feature (allowed)
	js = w.plan("replace", "-var", "cluster_name=review-train-b", "-var", "risk_score_type=String", "-var", "allow_destructive_changes=true")
	keep(t, "platform-replace", js)
	r = reviewOf(t, js, "destroy-stateful")
	if len(r.Destructive) < 2 || r.Destructive[0].Address != "mlplatform_feature_store.customers" || !r.Destructive[0].Stateful {
		t.Fatalf("replace: destructive %+v, want the feature store first, stateful", r.Destructive)
	}
	if d := destroyOf(r, "mlplatform_gpu_cluster.train"); d == nil || d.Action != review.ActionReplace || !strings.Contains(strings.Join(d.ReplacePaths, ","), "name") || d.ActionReason == "" {
		t.Errorf("replace: cluster %+v, want a replace with replace path name and an action reason", d)
	}
	if fs := r.Destructive[0]; len(fs.ReplacePaths) == 0 || !strings.Contains(fs.Holds, "s3://review-data/feature-store") {
		t.Errorf("replace: feature store %+v, want replace paths and the offline store it holds", fs)
	}
	if r.Policy.Passed {
		t.Errorf("replace: --fail-on destroy-stateful passed while a feature store is replaced")
	}

	// destroy
	js = w.plan("destroy", "-destroy")
	keep(t, "platform-destroy", js)
	r = reviewOf(t, js, "destroy-stateful")
	if r.Summary.Delete != 4 || gpu(r, "H200").Delta != -16 {
		t.Errorf("destroy: summary %+v, H200 %+v; want 4 deletes and -16 H200", r.Summary, gpu(r, "H200"))
	}
	if r.Policy.Passed {
		t.Errorf("destroy: --fail-on destroy-stateful passed while the feature store is deleted")
	}

}

// TestAccReviewPlans_quickstart plans the repository's quick start example
// as its user would, with two p5en.48xlarge nodes.
func TestAccReviewPlans_quickstart(t *testing.T) {
	h := acctest.SetupSerial(t) // the examples reach the emulator through AWS_ENDPOINT_URL
	createBucket(t, h, "mlplatform-demo-data", acctest.Region)
	key := createKey(t, h, acctest.Region)
	w := newWork(t, filepath.Join("..", "..", "..", "examples", "quickstart"), "")
	w.run("init", "-no-color")
	js := w.plan("quickstart", "-var", "gpu_nodes=2", "-var", "feature_store_role_arn=arn:aws:iam::123456789012:role/sagemaker-feature-store", "-var", "kms_key_arn="+key)
	keep(t, "quickstart-create", js)
	r := reviewOf(t, js, "residency,destroy-stateful")
	if r.Summary.Create != 3 {
		t.Errorf("summary %+v, want 3 creates (guard, feature store, cluster)", r.Summary)
	}
	if g := gpu(r, "H200"); g.Delta != 16 {
		t.Errorf("H200 %+v, want +16", g)
	}
	if r.Residency.Jurisdiction != "AE" || r.Residency.Mode != "enforce" || r.Residency.Counts[review.VerdictOutside] != 0 {
		t.Errorf("residency %+v", r.Residency)
	}
	if !r.Policy.Passed {
		t.Errorf("policy %+v, want passed: nothing outside, nothing destroyed", r.Policy)
	}
}

// TestAccReviewPlans_aws plans resources of the AWS provider. Terraform
// cannot download providers here, so it needs a local filesystem mirror
// holding registry.terraform.io/hashicorp/aws, named by
// MLPLATFORM_TF_PLUGIN_MIRROR; without one it does not run.
func TestAccReviewPlans_aws(t *testing.T) {
	mirror := os.Getenv("MLPLATFORM_TF_PLUGIN_MIRROR")
	if mirror == "" {
		t.Skip("not run: set MLPLATFORM_TF_PLUGIN_MIRROR to a filesystem mirror holding registry.terraform.io/hashicorp/aws")
	}
	if _, err := os.Stat(filepath.Join(mirror, "registry.terraform.io", "hashicorp", "aws")); err != nil {
		t.Fatalf("MLPLATFORM_TF_PLUGIN_MIRROR: %v", err)
	}
	h := acctest.SetupSerial(t) // the examples reach the emulator through AWS_ENDPOINT_URL
	w := newWork(t, filepath.Join("..", "testdata", "terraform", "aws"), mirror)
	w.run("init", "-no-color")
	endpoint := "endpoint=" + h.URL

	js := w.plan("aws-create", "-var", endpoint)
	keep(t, "aws-create", js)
	r := reviewOf(t, js, "residency")
	want := map[string]string{ // address|path -> verdict
		"aws_s3_bucket.eu_copy|(provider \"aws.eu\" configuration)":                            review.VerdictOutside,
		"aws_s3_bucket.data|(provider \"aws\" configuration)":                                  review.VerdictIn,
		"aws_sagemaker_endpoint_configuration.serve|kms_key_arn":                               review.VerdictOutside,
		"provider.aws.eu|region":                                                               review.VerdictOutside,
		"aws_instance.inference|availability_zone":                                             review.VerdictIn,
		"aws_sagemaker_endpoint_configuration.serve|data_capture_config[0].destination_s3_uri": review.VerdictIn,
		"aws_s3_bucket_replication_configuration.data|rule[0].destination[0].bucket":           review.VerdictOutside,
	}
	got := map[string]string{}
	for _, l := range r.Residency.Locations {
		got[l.Address+"|"+l.Path] = l.Verdict
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("aws-create: %s verdict %q, want %q", k, got[k], v)
		}
	}
	if g := gpu(r, "A10G"); g.After != 2 {
		t.Errorf("aws-create: A10G %+v, want 2 (2 x ml.g5.xlarge)", g)
	}
	if g := gpu(r, "L4"); g.After != 1 {
		t.Errorf("aws-create: L4 %+v, want 1 (g6.xlarge)", g)
	}
	if r.Policy.Passed {
		t.Errorf("aws-create: --fail-on residency passed with a bucket in eu-west-1")
	}

	// Apply the buckets and the key, then plan their destruction.
	w.run("apply", "-no-color", "-auto-approve", "-var", endpoint, "-target=aws_s3_bucket.data", "-target=aws_kms_key.data", "-target=aws_s3_bucket.eu_copy")
	js = w.plan("aws-destroy", "-destroy", "-var", endpoint)
	keep(t, "aws-destroy", js)
	r = reviewOf(t, js, "destroy-stateful")
	stateful := 0
	for _, d := range r.Destructive {
		if d.Stateful {
			stateful++
		}
	}
	if stateful != 3 || r.Policy.Passed {
		t.Errorf("aws-destroy: %d stateful deletes (%+v), policy %+v; want 3 and a failed policy", stateful, r.Destructive, r.Policy)
	}
}
