package conformance

import "slices"

// The scenarios: one table for both front ends. Inputs are written in
// Terraform's snake_case; the Pulumi driver translates them.

func feature(name, typ string) map[string]any { return map[string]any{"name": name, "type": typ} }

// gpuInputs is a one-node g6.xlarge cluster (no EFA) in mec1-az1 with the
// image behind the scenario's SSM parameter, changed by over.
func gpuInputs(name string, over map[string]any) func(*fixtures) map[string]any {
	return func(*fixtures) map[string]any {
		return merge(map[string]any{
			"name":           name,
			"instance_type":  "g6.xlarge",
			"node_count":     1,
			"zone_id":        "mec1-az1",
			"image":          imageParam,
			"root_volume":    map[string]any{"size_gib": 100},
			"capacity_retry": map[string]any{"attempts": 2, "initial_delay": "10ms"},
			"tags":           map[string]any{"team": "ml"},
		}, over)
	}
}

var baseFeatures = []any{feature("customer_id", "String"), feature("event_time", "Fractional"), feature("age", "Integral")}

// fsInputs is a feature group with an online store and an offline store in
// the UAE bucket, changed by over.
func fsInputs(name string, over map[string]any) func(*fixtures) map[string]any {
	return func(*fixtures) map[string]any {
		return merge(map[string]any{
			"name":                           name,
			"record_identifier_feature_name": "customer_id",
			"event_time_feature_name":        "event_time",
			"features":                       baseFeatures,
			"online_store":                   map[string]any{"enabled": true},
			"offline_store":                  map[string]any{"s3_uri": "s3://" + uaeBucket + "/" + name},
			"role_arn":                       role,
			"tags":                           map[string]any{"team": "risk"},
		}, over)
	}
}

func guardInputs(over map[string]any) func(*fixtures) map[string]any {
	return func(*fixtures) map[string]any {
		return merge(map[string]any{
			"regions": []any{"me-central-1"},
			"s3_uris": []any{"s3://" + uaeBucket + "/data"},
		}, over)
	}
}

// awsManagedKeys is the residency of a scenario not about keys: it accepts
// AWS managed keys, which jurisdiction AE refuses by default. Scenarios
// about keys and residency keep the default.
var awsManagedKeys = map[string]any{"require_customer_managed_keys": false}

var (
	audit      = map[string]any{"mode": "audit"}
	excludeAz3 = map[string]any{"excluded_zone_ids": []string{"mec1-az3"}}
	auditNoAz3 = map[string]any{"mode": "audit", "excluded_zone_ids": []string{"mec1-az3"}}
)

func scenarios() []scenario {
	out := append(coreScenarios(), cpuFootprintScenarios()...)
	out = append(out, cpuFootprintValidationScenarios()...)
	out = append(append(out, servingScenarios()...), servingScheduleAlarmScenarios()...)
	out = append(out, validationScenarios()...)
	out = append(out, secureDefaultScenarios()...)
	out = append(out, slurmScenarios()...)
	out = append(out, eksScenarios()...)
	out = append(out, kubeScenarios()...)
	// Those that wait out a timeout first: the suite runs its scenarios in
	// parallel, in this order.
	slices.SortStableFunc(out, func(a, b scenario) int {
		switch {
		case a.waits == b.waits:
			return 0
		case a.waits:
			return -1
		}
		return 1
	})
	return out
}

func coreScenarios() []scenario {
	return []scenario{
		{
			name: "gpu_cluster/lifecycle", kind: gpuCluster, resource: "conf-gpu", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: gpuInputs("conf-gpu", nil), want: created, check: wantNodes("conf-gpu", 1, "mec1-az1", "")},
				{name: "scale out in place", inputs: gpuInputs("conf-gpu", map[string]any{"node_count": 2}), want: updated, check: wantNodes("conf-gpu", 2, "mec1-az1", "")},
				{name: "retag in place", inputs: gpuInputs("conf-gpu", map[string]any{"node_count": 2, "tags": map[string]any{"team": "research"}}), want: updated, check: wantNodes("conf-gpu", 2, "", "")},
				{name: "zone change replaces", inputs: gpuInputs("conf-gpu", map[string]any{"node_count": 2, "tags": map[string]any{"team": "research"}, "zone_id": "mec1-az2"}), want: replaced, check: wantNodes("conf-gpu", 2, "mec1-az2", "")},
				{name: "vpc_id set replaces", inputs: func(f *fixtures) map[string]any {
					return gpuInputs("conf-gpu", map[string]any{"node_count": 2, "tags": map[string]any{"team": "research"}, "zone_id": "mec1-az2", "vpc_id": f.vpcID})(f)
				}, want: replaced, check: wantNodes("conf-gpu", 2, "mec1-az2", "")},
			},
		},
		{
			name: "gpu_cluster/drift", kind: gpuCluster, resource: "conf-drift", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: gpuInputs("conf-drift", map[string]any{"node_count": 2}), want: created, check: wantNodes("conf-drift", 2, "", "")},
				{name: "new AMI behind the SSM name rolls the nodes", outOfBand: pointImageAtB, inputs: gpuInputs("conf-drift", map[string]any{"node_count": 2}), want: updated, check: wantNodes("conf-drift", 2, "", "amiB")},
				{name: "node terminated outside is replaced", outOfBand: terminateOneNode("conf-drift"), inputs: gpuInputs("conf-drift", map[string]any{"node_count": 2}), want: updated, check: wantNodes("conf-drift", 2, "", "")},
			},
		},
		{
			name: "gpu_cluster/refusals", kind: gpuCluster, resource: "conf-refuse",
			steps: []step{
				{name: "capacity_retry.attempts 1000 refused", inputs: gpuInputs("conf-refuse", map[string]any{"capacity_retry": map[string]any{"attempts": 1000, "initial_delay": "10ms"}}),
					want: refused, messages: []string{"attempts", "20"}, noWrites: true},
				{name: "excluded zone refused, zero writes", residency: excludeAz3, inputs: gpuInputs("conf-refuse", map[string]any{"zone_id": "mec1-az3"}),
					want: refused, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
				{name: "audit mode: created with a warning", residency: auditNoAz3, inputs: gpuInputs("conf-refuse", map[string]any{"zone_id": "mec1-az3"}),
					want: created, warnings: []string{"zone-excluded"}, check: wantNodes("conf-refuse", 1, "mec1-az3", "")},
			},
		},
		{
			name: "gpu_cluster/unknown", kind: gpuCluster, resource: "conf-unknown", residency: awsManagedKeys,
			steps: []step{
				{name: "excluded zone known only at apply: refused at apply, zero writes", residency: excludeAz3, inputs: gpuInputs("conf-unknown", map[string]any{"zone_id": unknown{"mec1-az3"}}),
					want: refused, refusedAtApply: true, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
				{name: "zone known only at apply: created", inputs: gpuInputs("conf-unknown", map[string]any{"zone_id": unknown{"mec1-az1"}}), want: created, check: wantNodes("conf-unknown", 1, "mec1-az1", "")},
			},
		},
		{
			name: "gpu_cluster/import", kind: gpuCluster, resource: "conf-import", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: importGPU, want: created},
				{name: "import", inputs: importGPU, importID: "conf-import", want: imported},
			},
		},
		{
			name: "feature_store/lifecycle", kind: featureStore, resource: "conf-fs", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: fsInputs("conf-fs", nil), want: created, check: sageMakerCalls(map[string]int{"CreateFeatureGroup": 1})},
				{name: "add a feature in place", inputs: fsInputs("conf-fs", map[string]any{"features": append(append([]any{}, baseFeatures...), feature("risk_score", "Fractional"))}),
					want: updated, check: sageMakerCalls(map[string]int{"UpdateFeatureGroup": 1, "CreateFeatureGroup": 0, "DeleteFeatureGroup": 0})},
				{name: "retag in place", inputs: fsInputs("conf-fs", map[string]any{"features": append(append([]any{}, baseFeatures...), feature("risk_score", "Fractional")), "tags": map[string]any{"team": "fraud"}}),
					want: updated, check: sageMakerCalls(map[string]int{"CreateFeatureGroup": 0, "DeleteFeatureGroup": 0})},
				{name: "removing a feature refused, zero writes", inputs: fsInputs("conf-fs", map[string]any{"features": baseFeatures[:2], "tags": map[string]any{"team": "fraud"}}),
					want: refused, messages: []string{`feature "age" (Integral) is removed`, "allow"}, noWrites: true},
				{name: "removing a feature with allow_destructive_changes replaces", inputs: fsInputs("conf-fs", map[string]any{"features": baseFeatures[:2], "tags": map[string]any{"team": "fraud"}, "allow_destructive_changes": true}),
					want: replaced, check: sageMakerCalls(map[string]int{"CreateFeatureGroup": 1, "DeleteFeatureGroup": 1})},
			},
		},
		{
			name: "feature_store/import_and_drift", kind: featureStore, resource: "conf-fs-imp", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: fsInputs("conf-fs-imp", nil), want: created},
				{name: "import", inputs: fsInputs("conf-fs-imp", nil), importID: "conf-fs-imp", want: imported},
				{name: "deleted outside: created again", outOfBand: deleteFeatureGroup("conf-fs-imp"), inputs: fsInputs("conf-fs-imp", nil), want: created, check: sageMakerCalls(map[string]int{"CreateFeatureGroup": 1})},
			},
		},
		{
			name: "feature_store/residency", kind: featureStore, resource: "conf-fs-res",
			steps: []step{
				{name: "offline store outside the jurisdiction refused, zero writes", inputs: fsInputs("conf-fs-res", map[string]any{"offline_store": map[string]any{"s3_uri": "s3://" + euBucket + "/x"}}),
					want: refused, messages: []string{"s3-bucket-region", euBucket}, noWrites: true},
				{name: "audit mode: created with a warning", residency: audit, inputs: fsInputs("conf-fs-res", map[string]any{"offline_store": map[string]any{"s3_uri": "s3://" + euBucket + "/x"}}),
					want: created, warnings: []string{"s3-bucket-region"}},
			},
		},
		{
			name: "feature_store/unknown", kind: featureStore, resource: "conf-fs-unk", residency: awsManagedKeys,
			steps: []step{
				{name: "bucket outside known only at apply: refused at apply, zero writes", inputs: fsInputs("conf-fs-unk", map[string]any{"offline_store": map[string]any{"s3_uri": unknown{"s3://" + euBucket + "/x"}}}),
					want: refused, refusedAtApply: true, messages: []string{"s3-bucket-region"}, noWrites: true},
				{name: "bucket inside known only at apply: created", inputs: fsInputs("conf-fs-unk", map[string]any{"offline_store": map[string]any{"s3_uri": unknown{"s3://" + uaeBucket + "/x"}}}),
					want: created},
				{name: "tag value known only at apply: updated in place", inputs: fsInputs("conf-fs-unk", map[string]any{"offline_store": map[string]any{"s3_uri": "s3://" + uaeBucket + "/x"}, "tags": map[string]any{"team": unknown{"fraud"}}}),
					want: updated, check: sageMakerCalls(map[string]int{"CreateFeatureGroup": 0, "DeleteFeatureGroup": 0})},
			},
		},
		{
			name: "feature_store/unknown_retype", kind: featureStore, resource: "conf-fs-ret", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: fsInputs("conf-fs-ret", nil), want: created},
				// A change that may be destructive, unknown until apply, is
				// refused at plan without allow_destructive_changes, saying
				// what is not known (Terraform's rule).
				{name: "a feature type known only at apply: refused at plan as possibly destructive, zero writes", inputs: fsInputs("conf-fs-ret", map[string]any{
					"features": []any{feature("customer_id", "String"), feature("event_time", "Fractional"), map[string]any{"name": "age", "type": unknown{"String"}}}}),
					want: refused, messages: []string{"type is not known until apply", "allow"}, noWrites: true},
			},
		},
		{
			name: "residency_guard/lifecycle", kind: residencyGuard, resource: "conf-guard",
			steps: []step{
				{name: "create", inputs: guardInputs(nil), want: created, noWrites: true},
				{name: "add a zone in place", inputs: guardInputs(map[string]any{"zone_ids": []any{"mec1-az1"}}), want: updated, noWrites: true},
				{name: "region outside refused", inputs: guardInputs(map[string]any{"regions": []any{"eu-west-1"}}), want: refused, messages: []string{"region-allowed", "eu-west-1"}, noWrites: true},
				{name: "audit mode: updated with a warning", residency: audit, inputs: guardInputs(map[string]any{"regions": []any{"eu-west-1"}}), want: updated, warnings: []string{"region-allowed"}, noWrites: true},
			},
		},
		{
			name: "residency_guard/unknown", kind: residencyGuard, resource: "conf-guard-unk",
			steps: []step{
				{name: "bucket outside known only at apply: refused at apply", inputs: guardInputs(map[string]any{"s3_uris": []any{unknown{"s3://" + euBucket + "/x"}}}),
					want: refused, refusedAtApply: true, messages: []string{"s3-bucket-region", euBucket}, noWrites: true},
				{name: "bucket inside known only at apply: created", inputs: guardInputs(map[string]any{"s3_uris": []any{unknown{"s3://" + uaeBucket + "/x"}}}), want: created, noWrites: true},
			},
		},
	}
}

// importGPU is a cluster whose every input an import can read back: the
// AMI id itself, no settings that live only in configuration.
func importGPU(f *fixtures) map[string]any {
	return map[string]any{
		"name":          "conf-import",
		"instance_type": "g6.xlarge",
		"node_count":    1,
		"zone_id":       "mec1-az1",
		"image":         f.amiA,
		"root_volume":   map[string]any{"size_gib": 100},
		"tags":          map[string]any{"team": "ml"},
	}
}
