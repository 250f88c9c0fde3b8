package review

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

func loadPlan(t testing.TB, name string) *Plan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "plans", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func reviewFixture(t testing.TB, name string, opts Options) *Report {
	t.Helper()
	r, err := Review(context.Background(), loadPlan(t, name), opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// fixtures are every plan under testdata/plans.
var fixtures = []string{
	"quickstart-create", "platform-create", "platform-update", "platform-replace", "platform-destroy", "platform-audit",
	"aws-create", "aws-destroy", "handwritten-smb-serving", "handwritten-pulumi-preview",
}

func gpuModel(r *Report, m string) GPUModel {
	for _, g := range r.GPUs.Models {
		if g.Model == m {
			return g
		}
	}
	return GPUModel{}
}

func location(r *Report, addr, path string) Location {
	for _, l := range r.Residency.Locations {
		if l.Address == addr && l.Path == path {
			return l
		}
	}
	return Location{}
}

func TestSummaryAndDestructive(t *testing.T) {
	tests := []struct {
		plan        string
		want        Summary
		destructive []string // addresses in order
		stateful    int
	}{
		{"quickstart-create", Summary{Create: 3}, nil, 0},
		{"platform-create", Summary{Create: 4}, nil, 0},
		{"platform-update", Summary{Update: 3, NoOp: 1}, nil, 0},
		{"platform-replace", Summary{Replace: 2, Update: 1, NoOp: 1}, []string{"mlplatform_feature_store.customers", "mlplatform_gpu_cluster.train"}, 1},
		{"platform-destroy", Summary{Delete: 4}, []string{"mlplatform_feature_store.customers"}, 1},
		{"aws-destroy", Summary{Delete: 3}, []string{"aws_kms_key.data", "aws_s3_bucket.data", "aws_s3_bucket.eu_copy"}, 3},
		{"handwritten-smb-serving", Summary{Create: 2, Update: 1, Replace: 1, Delete: 1}, []string{"mlplatform_feature_store.legacy", "aws_s3_bucket.logs"}, 2},
		{"handwritten-pulumi-preview", Summary{Create: 2, Replace: 1}, []string{"mlplatform:index:FeatureStore::customers"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			r := reviewFixture(t, tt.plan, Options{})
			if r.Summary != tt.want {
				t.Errorf("summary %+v, want %+v", r.Summary, tt.want)
			}
			stateful := 0
			for i, d := range r.Destructive {
				if d.Stateful {
					stateful++
					if i > 0 && !r.Destructive[i-1].Stateful {
						t.Errorf("stateful %s comes after a stateless change", d.Address)
					}
				}
			}
			if stateful != tt.stateful {
				t.Errorf("%d stateful, want %d: %+v", stateful, tt.stateful, r.Destructive)
			}
			for i, a := range tt.destructive {
				if i >= len(r.Destructive) || r.Destructive[i].Address != a {
					t.Errorf("destructive[%d] = %+v, want %s", i, r.Destructive, a)
					break
				}
			}
		})
	}
}

func TestReplaceDetails(t *testing.T) {
	r := reviewFixture(t, "platform-replace", Options{})
	fs, gc := r.Destructive[0], r.Destructive[1]
	if fs.ActionReason != "replace_because_cannot_update" || strings.Join(fs.ReplacePaths, ",") != "features" {
		t.Errorf("feature store: reason %q paths %v, want replace_because_cannot_update on features", fs.ActionReason, fs.ReplacePaths)
	}
	if !strings.Contains(fs.Holds, "s3://review-data/feature-store") {
		t.Errorf("feature store holds %q, want its offline store", fs.Holds)
	}
	if strings.Join(gc.ReplacePaths, ",") != "name" || gc.ActionReason != "replace_because_cannot_update" || !strings.Contains(gc.Holds, "2 node(s) of p5en.48xlarge") {
		t.Errorf("cluster: %+v", gc)
	}
	h := reviewFixture(t, "handwritten-smb-serving", Options{})
	if d := h.Destructive[1]; strings.Join(d.ReplacePaths, ",") != "bucket" || !strings.Contains(d.Holds, "force_destroy = true") {
		t.Errorf("bucket replace: %+v", d)
	}
	if d := h.Destructive[0]; d.ActionReason != "delete_because_no_resource_config" || !strings.Contains(d.Holds, "online store") {
		t.Errorf("feature store delete: %+v", d)
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		plan          string
		before, after float64
		complete      bool
		unknown       []string // address/side
		priceSource   string   // a price used must carry this source
	}{
		// p5en.48xlarge has no me-central-1 price in the catalog: listed, never zero.
		{"platform-create", 0, 0, false, []string{"mlplatform_gpu_cluster.train/after"}, ""},
		{"platform-destroy", 0, 0, false, []string{"mlplatform_gpu_cluster.train/before"}, ""},
		{"aws-create", 0, 587.5, false, []string{"aws_sagemaker_endpoint_configuration.serve/after"}, "AWS EC2 On-Demand list price"},
		// c7i.xlarge: 0.1785/h x 730 h x 2 desired x 65/168 of the week (scale to zero off-hours).
		{"handwritten-smb-serving", 0, 100.83, false, []string{"mlplatform_gpu_cluster.train/before", "mlplatform_gpu_cluster.train/after", "mlplatform_serving_endpoint.chat/after"}, "us-east-1"},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			r := reviewFixture(t, tt.plan, Options{})
			c := r.Cost
			if c.BeforeMonthly != tt.before || c.AfterMonthly != tt.after || c.Complete != tt.complete {
				t.Errorf("cost %v -> %v complete %v, want %v -> %v complete %v", c.BeforeMonthly, c.AfterMonthly, c.Complete, tt.before, tt.after, tt.complete)
			}
			var got []string
			for _, u := range c.Unknown {
				got = append(got, u.Address+"/"+u.Side)
				if u.Reason == "" {
					t.Errorf("unknown price of %s has no reason", u.Address)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.unknown, " ") {
				t.Errorf("unknown %v, want %v", got, tt.unknown)
			}
			for _, l := range c.Resources {
				for _, u := range c.Unknown {
					if u.Address == l.Address && ((u.Side == "after" && l.After != nil) || (u.Side == "before" && l.Before != nil)) {
						t.Errorf("%s: unknown %s price shown as a figure: %+v", l.Address, u.Side, l)
					}
				}
			}
			if tt.priceSource != "" {
				if len(c.Prices) == 0 || !strings.Contains(c.Prices[0].Source, tt.priceSource) || c.Prices[0].AsOf == "" {
					t.Errorf("prices %+v, want a dated price from %q", c.Prices, tt.priceSource)
				}
			}
		})
	}
}

func TestGPUs(t *testing.T) {
	tests := []struct {
		plan          string
		model         string
		before, after int
		hoursDelta    float64
	}{
		{"platform-create", "H200", 0, 16, 16 * platform.HoursPerMonth},
		{"platform-update", "H200", 16, 24, 8 * platform.HoursPerMonth},
		{"platform-destroy", "H200", 16, 0, -16 * platform.HoursPerMonth},
		{"aws-create", "A10G", 0, 2, 2 * platform.HoursPerMonth},
		{"aws-create", "L4", 0, 1, platform.HoursPerMonth},
		// Serving endpoint: 2 x ml.g6.2xlarge at the autoscaling minimum.
		{"handwritten-smb-serving", "L4", 0, 2, 2 * platform.HoursPerMonth},
		{"handwritten-smb-serving", "H200", 16, 32, 16 * platform.HoursPerMonth},
		{"handwritten-pulumi-preview", "H200", 0, 16, 16 * platform.HoursPerMonth},
	}
	for _, tt := range tests {
		t.Run(tt.plan+"/"+tt.model, func(t *testing.T) {
			g := gpuModel(reviewFixture(t, tt.plan, Options{}), tt.model)
			if g.Before != tt.before || g.After != tt.after || g.Delta != tt.after-tt.before || g.HoursDelta != tt.hoursDelta {
				t.Errorf("%+v, want %d -> %d, %v GPU-hours", g, tt.before, tt.after, tt.hoursDelta)
			}
		})
	}
}

func TestResidency(t *testing.T) {
	tests := []struct {
		plan, addr, path string
		verdict, rule    string
		mode             string
	}{
		{"platform-create", "provider.mlplatform", "region", VerdictIn, "region-allowed", "enforce"},
		{"platform-create", "mlplatform_gpu_cluster.train", "zone_id", VerdictIn, "zone-allowed, zone-excluded", "enforce"},
		// The cluster names its zone and zone id: the name maps to an allowed id.
		{"platform-create", "mlplatform_gpu_cluster.train", "zone", VerdictIn, "zone-allowed, zone-excluded", "enforce"},
		// The bucket is not in the plan: only the provider, with AWS, can tell.
		{"platform-create", "mlplatform_residency_guard.data", "s3_uris[0]", VerdictUnknown, "unverifiable", "enforce"},
		{"platform-audit", "mlplatform_residency_guard.data", "regions[0]", VerdictOutside, "region-allowed", "audit"},
		{"platform-audit", "mlplatform_feature_store.customers", "offline_store.kms_key_arn", VerdictOutside, "kms-key-region", "audit"},
		{"aws-create", "provider.aws.eu", "region", VerdictOutside, "region-allowed", "audit"},
		{"aws-create", "aws_s3_bucket.eu_copy", `(provider "aws.eu" configuration)`, VerdictOutside, "region-allowed", "audit"},
		{"aws-create", "aws_s3_bucket_replication_configuration.data", "rule[0].destination[0].bucket", VerdictOutside, "s3-bucket-region", "audit"},
		{"aws-create", "aws_sagemaker_endpoint_configuration.serve", "kms_key_arn", VerdictOutside, "kms-key-region", "audit"},
		{"aws-create", "aws_sagemaker_endpoint_configuration.serve", "data_capture_config[0].destination_s3_uri", VerdictIn, "partition, s3-bucket-region, s3-replication", "audit"},
		{"aws-create", "aws_instance.inference", "availability_zone", VerdictIn, "zone-allowed, zone-excluded", "audit"},
		{"handwritten-smb-serving", "mlplatform_serving_endpoint.chat", "data_capture.destination_s3_uri", VerdictUnknown, "", "enforce"},
		{"handwritten-smb-serving", "mlplatform_serving_endpoint.chat", "image", VerdictIn, "not-ecr, partition, ecr-image-region", "enforce"},
		{"handwritten-pulumi-preview", "provider.aws", "region", VerdictOutside, "region-allowed", "enforce"},
		{"handwritten-pulumi-preview", "aws:s3/bucketV2:BucketV2::exports", "region", VerdictOutside, "region-allowed", "enforce"},
		// AE requires customer managed keys by default: whether a key ARN
		// that is not in the plan is customer managed only KMS can tell.
		{"handwritten-pulumi-preview", "mlplatform:index:GpuCluster::train", "kms_key_arn", VerdictUnknown, "unverifiable", "enforce"},
	}
	for _, tt := range tests {
		t.Run(tt.plan+"/"+tt.addr+"/"+tt.path, func(t *testing.T) {
			r := reviewFixture(t, tt.plan, Options{})
			if !r.Residency.Evaluated || r.Residency.Jurisdiction != "AE" || r.Residency.Mode != tt.mode {
				t.Fatalf("residency %+v, want AE %s", r.Residency, tt.mode)
			}
			l := location(r, tt.addr, tt.path)
			if l.Verdict != tt.verdict || l.Rule != tt.rule {
				t.Errorf("verdict %q rule %q, want %q %q: %+v", l.Verdict, l.Rule, tt.verdict, tt.rule, l)
			}
			if l.Verdict != VerdictIn && l.Fix == "" {
				t.Errorf("no fix for %+v", l)
			}
		})
	}
}

func TestJurisdictionFlag(t *testing.T) {
	data := []byte(`{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":[{"address":"aws_s3_bucket.b","mode":"managed","type":"aws_s3_bucket","name":"b","provider_name":"registry.terraform.io/hashicorp/aws","change":{"actions":["create"],"before":null,"after":{"bucket":"b"},"after_unknown":{"region":true}}}],"configuration":{"provider_config":{"aws":{"name":"aws","full_name":"registry.terraform.io/hashicorp/aws","expressions":{"region":{"constant_value":"eu-west-1"}}}}}}`)
	p, err := ParsePlan(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Review(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Residency.Evaluated || !strings.Contains(r.Residency.NotEvaluatedReason, "--jurisdiction") {
		t.Errorf("without a jurisdiction: %+v, want not evaluated, naming --jurisdiction", r.Residency)
	}
	r, err = Review(context.Background(), p, Options{Jurisdiction: "AE"})
	if err != nil {
		t.Fatal(err)
	}
	if l := location(r, "aws_s3_bucket.b", `(provider "aws" configuration)`); l.Verdict != VerdictOutside || r.Residency.JurisdictionSource != "flag --jurisdiction" {
		t.Errorf("with --jurisdiction AE: %+v in %+v", l, r.Residency)
	}
}

func TestValidation(t *testing.T) {
	r := reviewFixture(t, "platform-create", Options{})
	if r.Validation.Declared || len(r.Validation.Gates) != 0 || !strings.Contains(Markdown(r, 0), "| **Validation gate** | none declared |") {
		t.Errorf("no validation block: %+v, want none declared", r.Validation)
	}
	r = reviewFixture(t, "handwritten-smb-serving", Options{})
	if len(r.Validation.Gates) != 2 {
		t.Fatalf("gates %+v, want 2", r.Validation.Gates)
	}
	fp, gc := r.Validation.Gates[0], r.Validation.Gates[1]
	if fp.Nodes == nil || *fp.Nodes != 2 || fp.Level != "quick" || fp.OnFailure != "replace" || !strings.HasPrefix(fp.Profile, "c7i.xlarge") {
		t.Errorf("footprint gate %+v", fp)
	}
	if gc.Nodes == nil || *gc.Nodes != 4 || gc.Level != "full" || !strings.Contains(gc.Profile, "8 x H200") {
		t.Errorf("cluster gate %+v", gc)
	}
}

func TestGoldenMarkdown(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			rules, _ := ParseRules("residency,destroy-stateful,cost-increase>500")
			got := Markdown(reviewFixture(t, name, Options{FailOn: rules}), 0)
			path := filepath.Join("testdata", "golden", name+".md")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("Markdown differs from %s (run with -update after checking):\n%s", path, diffLines(string(want), got))
			}
		})
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out bytes.Buffer
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return out.String()
}

func TestJSONMatchesSchema(t *testing.T) {
	schema := compileSchema(t)
	for _, name := range fixtures {
		rules, _ := ParseRules("residency")
		r := reviewFixture(t, name, Options{FailOn: rules})
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: the JSON report does not match report.schema.json: %v", name, err)
		}
	}
	// The schema can fail: a report with a verdict it does not know.
	var bad map[string]any
	b, _ := json.Marshal(reviewFixture(t, "aws-create", Options{}))
	_ = json.Unmarshal(b, &bad)
	bad["residency"].(map[string]any)["locations"].([]any)[0].(map[string]any)["verdict"] = "maybe"
	if err := schema.Validate(bad); err == nil {
		t.Error("the schema accepted verdict \"maybe\"")
	}
}

// TestGuideShowsARealComment keeps the guide's example comment equal to
// what the review writes for the audit-mode plan of the real Terraform CLI.
func TestGuideShowsARealComment(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "platform-audit.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join("..", "..", "docs", "guides", "review.md"), filepath.Join("..", "..", "templates", "guides", "review.md")} {
		guide, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(guide), "```markdown\n"+string(want)+"```") {
			t.Errorf("%s does not show the current comment of testdata/golden/platform-audit.md", p)
		}
	}
}

func TestRequiredTags(t *testing.T) {
	data := []byte(`{"format_version":"1.2","resource_changes":[
	 {"address":"mlplatform_gpu_cluster.a","mode":"managed","type":"mlplatform_gpu_cluster","name":"a","provider_name":"registry.terraform.io/mlplatform/mlplatform","change":{"actions":["create"],"before":null,"after":{"instance_type":"g6.xlarge","node_count":1,"tags_all":{"owner":"ml"}},"after_unknown":{}}},
	 {"address":"mlplatform_gpu_cluster.b","mode":"managed","type":"mlplatform_gpu_cluster","name":"b","provider_name":"registry.terraform.io/mlplatform/mlplatform","change":{"actions":["create"],"before":null,"after":{"instance_type":"g6.xlarge","node_count":1,"tags_all":{"owner":"ml","cost_center":"42"}},"after_unknown":{}}}],
	 "configuration":{"provider_config":{"mlplatform":{"name":"mlplatform","expressions":{"residency":{"jurisdiction":{"constant_value":"AE"},"required_tags":{"constant_value":["cost_center"]}}}}}}}`)
	p, err := ParsePlan(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Review(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l := location(r, "mlplatform_gpu_cluster.a", `tags["cost_center"]`); l.Verdict != VerdictViolation || l.Rule != "required-tag" {
		t.Errorf("missing required tag: %+v", l)
	}
	if l := location(r, "mlplatform_gpu_cluster.b", `tags["cost_center"]`); l.Verdict != "" {
		t.Errorf("tag present, yet reported: %+v", l)
	}
	// Priced per line and rounded to cents: 2 x round(0.8048 x 730) = 2 x 587.50.
	if r.Cost.AfterMonthly != 1175 || !r.Cost.Complete {
		t.Errorf("cost %+v", r.Cost)
	}
}
