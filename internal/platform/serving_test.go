package platform

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidateServingEndpoint(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*ServingEndpointSpec)
		unknown []string
		path    string // "" means valid
		msg     string
	}{
		{name: "valid cpu", edit: func(*ServingEndpointSpec) {}},
		{name: "valid gpu", edit: func(s *ServingEndpointSpec) { s.Variants[0].InstanceType = "ml.g6.2xlarge" }},
		{name: "valid serverless", edit: func(s *ServingEndpointSpec) {
			s.Variants[0] = ServingVariant{Name: "small", Serverless: &ServingServerless{MemoryMB: 2048, MaxConcurrency: 5}}
		}},
		{name: "bad name", edit: func(s *ServingEndpointSpec) { s.Name = "fraud_v1" }, path: "name"},
		{name: "not ecr", edit: func(s *ServingEndpointSpec) { s.Model.Image = "docker.io/library/nginx:1" }, path: "model.image", msg: "not an ECR image"},
		{name: "unknown image skipped", edit: func(s *ServingEndpointSpec) { s.Model.Image = "" }, unknown: []string{"model.image"}},
		{name: "model data not s3", edit: func(s *ServingEndpointSpec) { s.Model.ModelDataURI = "https://x/y" }, path: "model.model_data_uri"},
		{name: "no role", edit: func(s *ServingEndpointSpec) { s.Model.ExecutionRoleARN = "" }, path: "model.execution_role_arn"},
		{name: "no variants", edit: func(s *ServingEndpointSpec) { s.Variants = nil }, path: "variants"},
		{name: "not ml type", edit: func(s *ServingEndpointSpec) { s.Variants[0].InstanceType = "g6.xlarge" }, path: "variants[0].instance_type", msg: "ml.FAMILY.SIZE"},
		{name: "unknown family", edit: func(s *ServingEndpointSpec) { s.Variants[0].InstanceType = "ml.x9z.large" }, path: "variants[0].instance_type", msg: "x9z family"},
		{name: "zero count", edit: func(s *ServingEndpointSpec) { s.Variants[0].InitialInstanceCount = 0 }, path: "variants[0].initial_instance_count"},
		{name: "both kinds", edit: func(s *ServingEndpointSpec) {
			s.Variants[0].Serverless = &ServingServerless{MemoryMB: 1024, MaxConcurrency: 1}
		}, path: "variants[0].serverless"},
		{name: "mixed", edit: func(s *ServingEndpointSpec) {
			s.Variants = append(s.Variants, ServingVariant{Name: "small", Serverless: &ServingServerless{MemoryMB: 1024, MaxConcurrency: 1}})
		}, path: "variants", msg: "does not mix"},
		{name: "serverless memory", edit: func(s *ServingEndpointSpec) {
			s.Variants[0] = ServingVariant{Name: "small", Serverless: &ServingServerless{MemoryMB: 1500, MaxConcurrency: 1}}
		}, path: "variants[0].serverless.memory_size_mb"},
		{name: "duplicate variant", edit: func(s *ServingEndpointSpec) { s.Variants = append(s.Variants, s.Variants[0]) }, path: "variants[1].name"},
		{name: "autoscaling min > max", edit: func(s *ServingEndpointSpec) {
			s.Variants[0].Autoscaling = &ServingAutoscaling{Min: 3, Max: 2, TargetInvocations: 100}
		}, path: "variants[0].autoscaling.max_capacity", msg: "at least min_capacity"},
		{name: "sampling over 100", edit: func(s *ServingEndpointSpec) {
			s.DataCapture = &ServingDataCapture{Enabled: true, SamplingPercentage: 101, DestinationS3URI: "s3://capture/fraud"}
		}, path: "data_capture.sampling_percentage"},
		{name: "sampling negative", edit: func(s *ServingEndpointSpec) {
			s.DataCapture = &ServingDataCapture{Enabled: true, SamplingPercentage: -1, DestinationS3URI: "s3://capture/fraud"}
		}, path: "data_capture.sampling_percentage"},
		{name: "capture option", edit: func(s *ServingEndpointSpec) {
			s.DataCapture = &ServingDataCapture{Enabled: true, SamplingPercentage: 10, DestinationS3URI: "s3://capture/fraud", CaptureOptions: []string{"Both"}}
		}, path: "data_capture.capture_options[0]"},
		{name: "capture without destination", edit: func(s *ServingEndpointSpec) {
			s.DataCapture = &ServingDataCapture{Enabled: true, SamplingPercentage: 10}
		}, path: "data_capture.destination_s3_uri"},
		{name: "routing", edit: func(s *ServingEndpointSpec) { s.Deployment = &ServingDeployment{TrafficRouting: "rolling"} }, path: "deployment.traffic_routing"},
		{name: "canary without size", edit: func(s *ServingEndpointSpec) { s.Deployment = &ServingDeployment{TrafficRouting: TrafficCanary} }, path: "deployment.size_type"},
		{name: "canary percent", edit: func(s *ServingEndpointSpec) {
			s.Deployment = &ServingDeployment{TrafficRouting: TrafficCanary, SizeType: SizeCapacityPercent, SizeValue: 101}
		}, path: "deployment.size_value"},
		{name: "max execution", edit: func(s *ServingEndpointSpec) {
			s.Deployment = &ServingDeployment{TrafficRouting: TrafficAllAtOnce, MaxExecutionSeconds: 60}
		}, path: "deployment.maximum_execution_timeout_seconds"},
		{name: "kms not arn", edit: func(s *ServingEndpointSpec) { s.KMSKeyARN = "alias/x" }, path: "kms_key_arn"},
		{name: "volume key on local instance storage", edit: func(s *ServingEndpointSpec) {
			s.Variants[0].InstanceType = "ml.g5.xlarge"
			s.KMSKeyARN = "arn:aws:kms:me-central-1:123456789012:key/k"
		}, path: "kms_key_arn", msg: `variants[0] ("primary") runs on ml.g5.xlarge, which has local NVMe instance storage`},
		{name: "volume key when one variant has local storage", edit: func(s *ServingEndpointSpec) {
			s.Variants = append(s.Variants, ServingVariant{Name: "gpu", InstanceType: "ml.p5.48xlarge", InitialInstanceCount: 1})
			s.KMSKeyARN = "arn:aws:kms:me-central-1:123456789012:key/k"
		}, path: "kms_key_arn", msg: "refuses a KMS key"},
		{name: "volume key on EBS-only type", edit: func(s *ServingEndpointSpec) {
			s.KMSKeyARN = "arn:aws:kms:me-central-1:123456789012:key/k"
		}},
		{name: "volume key, instance type unknown at plan", edit: func(s *ServingEndpointSpec) {
			s.Variants[0].InstanceType = "ml.g5.xlarge"
			s.KMSKeyARN = "arn:aws:kms:me-central-1:123456789012:key/k"
		}, unknown: []string{"variants[0].instance_type"}},
		{name: "reserved tag", edit: func(s *ServingEndpointSpec) { s.Tags = map[string]string{"mlplatform:creation-token": "x"} }, path: `tags["mlplatform:creation-token"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := servingSpec()
			tt.edit(&s)
			errs := ValidateServingEndpoint(s, tt.unknown)
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Path == tt.path && strings.Contains(e.Detail, tt.msg) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got %v", tt.path, tt.msg, errs)
		})
	}
}

func TestServingDeploymentWarnings(t *testing.T) {
	canary := &ServingDeployment{TrafficRouting: TrafficCanary, SizeType: SizeCapacityPercent, SizeValue: 10, WaitSeconds: 300}
	one := servingSpec()
	one.Deployment = canary
	if ws := ServingDeploymentWarnings(one, nil); len(ws) != 0 {
		t.Errorf("single instance variant: %v", ws)
	}
	if d := servingDeployment(one); d.TrafficRouting != "CANARY" || d.SizeType != "CAPACITY_PERCENT" || d.SizeValue != 10 {
		t.Errorf("deployment sent = %+v", d)
	}
	two := servingSpec()
	two.Deployment = canary
	two.Variants = append(two.Variants, ServingVariant{Name: "shadow", InstanceType: "ml.m5.large", InitialInstanceCount: 1})
	ws := ServingDeploymentWarnings(two, nil)
	if len(ws) != 1 || !ws[0].Warning || !strings.Contains(ws[0].Summary, GuardrailRuleMultiVariant) || ws[0].Path != "deployment.traffic_routing" {
		t.Errorf("multi-variant: %+v", ws)
	}
	if d := servingDeployment(two); d.TrafficRouting != "ALL_AT_ONCE" {
		t.Errorf("a fallback is sent as what runs, all at once; sent %+v", d)
	}
	sl := servingSpec()
	sl.Deployment = canary
	sl.Variants[0] = ServingVariant{Name: "small", Serverless: &ServingServerless{MemoryMB: 1024, MaxConcurrency: 2}}
	ws = ServingDeploymentWarnings(sl, nil)
	if len(ws) != 1 || !strings.Contains(ws[0].Summary, GuardrailRuleServerless) {
		t.Errorf("serverless: %+v", ws)
	}
	if ws := ServingDeploymentWarnings(two, []string{"variants"}); len(ws) != 0 {
		t.Errorf("unknown variants warned at plan: %v", ws)
	}
}

func TestPlanServingEndpoint(t *testing.T) {
	base := servingSpec()
	img := servingSpec()
	img.Model.Image = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
	tags := servingSpec()
	tags.Tags = map[string]string{"a": "b"}
	renamed := servingSpec()
	renamed.Name = "fraud2"
	count := servingSpec()
	count.Variants[0].InitialInstanceCount = 2
	dep := servingSpec()
	dep.Deployment = &ServingDeployment{TrafficRouting: TrafficLinear, SizeType: SizeInstanceCount, SizeValue: 1}
	tests := []struct {
		name             string
		new              ServingEndpointSpec
		unknown          []string
		replace, newConf bool
		inPlace          int
	}{
		{"no change", base, nil, false, false, 0},
		{"image", img, nil, false, true, 0},
		{"count (drift back)", count, nil, false, true, 0},
		{"tags", tags, nil, false, false, 1},
		{"deployment only", dep, nil, false, false, 1},
		{"rename", renamed, nil, true, false, 0},
		{"unknown image", base, []string{"model.image"}, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanServingEndpoint(base, tt.new, tt.unknown)
			if (len(p.Replace) > 0) != tt.replace || p.NewConfig() != tt.newConf || len(p.InPlace) != tt.inPlace {
				t.Errorf("plan = %+v", p)
			}
		})
	}
}

func TestReadBackServingEndpoint(t *testing.T) {
	declared := servingSpec()
	declared.Tags = map[string]string{"team": "risk"}
	declared.Deployment = &ServingDeployment{TrafficRouting: TrafficAllAtOnce}
	found := &ServingEndpoint{Spec: servingSpec(), ARN: "arn", ConfigName: "fraud-1", ModelName: "fraud-1"}
	found.Spec.Variants[0].InitialWeight = 1
	found.Spec.Variants[0].InitialInstanceCount = 3 // scaled outside
	found.Spec.Tags = map[string]string{"team": "risk", "owner": "platform"}
	rb := ReadBackServingEndpointOf(found, declared, DeploymentCreated, map[string]string{"owner": "platform"})
	if rb.Spec.Variants[0].InitialWeight != 0 {
		t.Errorf("an unset weight reported as the default must stay unset: %v", rb.Spec.Variants[0].InitialWeight)
	}
	if rb.Spec.Variants[0].InitialInstanceCount != 3 {
		t.Error("drift in the instance count is not reported")
	}
	if len(rb.Spec.Tags) != 1 || rb.TagsAll["owner"] != "platform" {
		t.Errorf("tags %v, all %v", rb.Spec.Tags, rb.TagsAll)
	}
	if rb.Spec.Deployment == nil || rb.LastDeployment != DeploymentCreated {
		t.Errorf("declared-only values lost: %+v", rb)
	}
}

// FuzzServingInstanceType: any string gets an answer without panicking, and
// an accepted type is ml.FAMILY.SIZE of a known family.
func FuzzServingInstanceType(f *testing.F) {
	for _, s := range []string{"ml.g6.xlarge", "ml.p5.48xlarge", "ml.m5.large", "g6.xlarge", "ml..large", "ml.g6.", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ServingInstanceTypeProblem(s) != "" {
			return
		}
		parts := strings.Split(s, ".")
		if len(parts) != 3 || parts[0] != "ml" {
			t.Fatalf("%q accepted", s)
		}
		found := false
		for _, fam := range ServingFamilies() {
			found = found || fam == parts[1]
		}
		if !found {
			t.Fatalf("%q accepted with an unknown family", s)
		}
	})
}

// TestServingVolumeKeyOnLocalStorage: an endpoint on instance types with
// local NVMe storage takes no volume key (SageMaker refuses one there), so
// the customer managed key rule does not ask for kms_key_arn; it still asks
// for the data capture key, and for the volume key of EBS-only types. While
// the instance types are not known the volume key is left to apply.
func TestServingVolumeKeyOnLocalStorage(t *testing.T) {
	paths := func(s ServingEndpointSpec, unknown []string) []string {
		var out []string
		for _, r := range ServingEndpointResidencyRefs(s, unknown) {
			if strings.HasSuffix(r.Path, "kms_key_arn") {
				out = append(out, r.Path)
			}
		}
		return out
	}
	capture := &ServingDataCapture{Enabled: true, SamplingPercentage: 10, DestinationS3URI: "s3://capture/fraud"}
	for _, tc := range []struct {
		name    string
		types   []string
		capture bool
		unknown []string
		want    string
		note    bool
	}{
		{name: "EBS only: the volume key is required", types: []string{"ml.m5.large"}, want: "kms_key_arn"},
		{name: "g5: none", types: []string{"ml.g5.xlarge"}, want: "", note: true},
		{name: "g6, p4d, p5: none", types: []string{"ml.g6.xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge"}, want: "", note: true},
		{name: "one variant on local storage: none for the config", types: []string{"ml.m5.large", "ml.g6.2xlarge"}, want: "", note: true},
		{name: "data capture key still required", types: []string{"ml.g5.xlarge"}, capture: true, want: "data_capture.kms_key_arn", note: true},
		{name: "instance type unknown: checked at apply", types: []string{"ml.m5.large"}, unknown: []string{"variants[0].instance_type"}, want: ""},
		{name: "variants unknown: checked at apply", types: []string{"ml.m5.large"}, unknown: []string{"variants"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := servingSpec()
			s.Variants = nil
			for i, typ := range tc.types {
				s.Variants = append(s.Variants, ServingVariant{Name: fmt.Sprintf("v%d", i), InstanceType: typ, InitialInstanceCount: 1})
			}
			if tc.capture {
				s.DataCapture = capture
			}
			if got := strings.Join(paths(s, tc.unknown), ","); got != tc.want {
				t.Errorf("key refs = %q, want %q", got, tc.want)
			}
			notes := ServingVolumeKeyNote(s, tc.unknown, true)
			if got := len(notes) == 1; got != tc.note {
				t.Fatalf("note = %v, want one: %t", notes, tc.note)
			}
			if tc.note && (!notes[0].Warning || notes[0].Path != "kms_key_arn" || !strings.Contains(notes[0].Detail, "hardware module") ||
				!strings.Contains(notes[0].Detail, "residency.require_customer_managed_keys")) {
				t.Errorf("note = %+v", notes[0])
			}
			if notes := ServingVolumeKeyNote(s, tc.unknown, false); len(notes) != 0 {
				t.Errorf("note without the rule: %v", notes)
			}
		})
	}
	s := servingSpec()
	s.KMSKeyARN = "arn:aws:kms:me-central-1:123456789012:key/k"
	if got := strings.Join(paths(s, []string{"variants"}), ","); got != "kms_key_arn" {
		t.Errorf("a key set while the variants are unknown is checked at plan: refs %q", got)
	}
	for typ, want := range map[string]bool{"ml.g5.xlarge": true, "ml.g4dn.xlarge": true, "ml.p5en.48xlarge": true, "ml.m5.large": false, "ml.c7i.large": false, "ml.inf2.xlarge": false, "g5.xlarge": false} {
		if got := ServingLocalStorage(typ); got != want {
			t.Errorf("ServingLocalStorage(%q) = %t, want %t", typ, got, want)
		}
	}
}
