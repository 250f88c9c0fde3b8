package conformance

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/mlplatform/mlplatform/acctest"
)

const (
	svImage      = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1"
	svImage2     = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
	svImageEU    = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/fraud:1"
	svRole       = "arn:aws:iam::123456789012:role/serving"
	svRollbackIs = "Deployment rolled back: alarm fraud-p99-latency went to ALARM"
)

// svInputs is an endpoint serving image on one ml.m5.large, its model data
// in the UAE bucket, changed by over.
func svInputs(name, image string, over map[string]any) func(*fixtures) map[string]any {
	return func(*fixtures) map[string]any {
		return merge(map[string]any{
			"name": name,
			"model": map[string]any{
				"image":              image,
				"model_data_uri":     "s3://" + uaeBucket + "/" + name + "/model.tar.gz",
				"execution_role_arn": svRole,
			},
			"variants": []any{map[string]any{"name": "primary", "instance_type": "ml.m5.large", "initial_instance_count": 1}},
			"tags":     map[string]any{"team": "fraud"},
		}, over)
	}
}

func servingScenarios() []scenario {
	return []scenario{
		{
			name: "serving_endpoint/lifecycle", kind: servingEndpoint, resource: "conf-sv", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: svInputs("conf-sv", svImage, nil), want: created, check: wantConfigs(1)},
				{name: "new image: blue/green in place, old config gone", inputs: svInputs("conf-sv", svImage2, nil), want: updated, check: wantConfigs(1)},
				{name: "GPU variant: blue/green in place", inputs: svInputs("conf-sv", svImage2, map[string]any{
					"variants": []any{map[string]any{"name": "primary", "instance_type": "ml.g6.xlarge", "initial_instance_count": 1}}}), want: updated, check: wantConfigs(1)},
				{name: "retag in place, no new config", inputs: svInputs("conf-sv", svImage2, map[string]any{
					"variants": []any{map[string]any{"name": "primary", "instance_type": "ml.g6.xlarge", "initial_instance_count": 1}}, "tags": map[string]any{"team": "risk"}}),
					want: updated, check: sageMakerCalls(map[string]int{"CreateEndpointConfig": 0, "UpdateEndpoint": 0})},
				{name: "new name replaces", inputs: svInputs("conf-sv-2", svImage2, nil), want: replaced, check: wantConfigs(1)},
			},
		},
		{
			name: "serving_endpoint/rollback", kind: servingEndpoint, resource: "conf-sv-rb", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: svInputs("conf-sv-rb", svImage, nil), want: created},
				{name: "update rolled back by SageMaker: fails with its reason", outOfBand: rollBack(svRollbackIs), inputs: svInputs("conf-sv-rb", svImage2, nil),
					want: refused, refusedAtApply: true, messages: []string{"rolled", "fraud-p99-latency"}, check: wantConfigs(1)},
				{name: "the change is planned again and applies", outOfBand: rollBack(""), inputs: svInputs("conf-sv-rb", svImage2, nil), want: updated, check: wantConfigs(1)},
			},
		},
		{
			name: "serving_endpoint/residency", kind: servingEndpoint, resource: "conf-sv-res",
			steps: []step{
				{name: "image outside the jurisdiction refused, zero writes", inputs: svInputs("conf-sv-res", svImageEU, nil),
					want: refused, messages: []string{"ecr-image-region", "eu-west-1"}, noWrites: true},
				{name: "capture bucket outside refused, zero writes", inputs: svInputs("conf-sv-res", svImage, map[string]any{
					"data_capture": map[string]any{"sampling_percentage": 10, "destination_s3_uri": "s3://" + euBucket + "/capture"}}),
					want: refused, messages: []string{"s3-bucket-region", euBucket}, noWrites: true},
				{name: "audit mode: created with a warning", residency: audit, inputs: svInputs("conf-sv-res", svImageEU, nil),
					want: created, warnings: []string{"ecr-image-region"}},
			},
		},
		{
			name: "serving_endpoint/unknown", kind: servingEndpoint, resource: "conf-sv-unk", residency: awsManagedKeys,
			steps: []step{
				{name: "image outside known only at apply: refused at apply, zero writes", inputs: svInputs("conf-sv-unk", "", map[string]any{
					"model": map[string]any{"image": unknown{svImageEU}, "execution_role_arn": svRole}}),
					want: refused, refusedAtApply: true, messages: []string{"ecr-image-region"}, noWrites: true},
				{name: "image inside known only at apply: created", inputs: svInputs("conf-sv-unk", "", map[string]any{
					"model": map[string]any{"image": unknown{svImage}, "execution_role_arn": svRole}}), want: created},
				{name: "tag value known only at apply: updated in place", inputs: svInputs("conf-sv-unk", "", map[string]any{
					"model": map[string]any{"image": svImage, "execution_role_arn": svRole}, "tags": map[string]any{"team": unknown{"risk"}}}),
					want: updated, check: sageMakerCalls(map[string]int{"CreateEndpointConfig": 0, "UpdateEndpoint": 0})},
			},
		},
		{
			name: "serving_endpoint/import_and_drift", kind: servingEndpoint, resource: "conf-sv-imp", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: svInputs("conf-sv-imp", svImage, nil), want: created},
				{name: "import", inputs: svInputs("conf-sv-imp", svImage, nil), importID: "conf-sv-imp", want: imported},
				{name: "variant scaled outside: scaled back", outOfBand: scaleVariant("conf-sv-imp", "primary", 3), inputs: svInputs("conf-sv-imp", svImage, nil), want: updated},
			},
		},
		{
			name: "serving_endpoint/canary", kind: servingEndpoint, resource: "conf-sv-can", residency: awsManagedKeys,
			steps: []step{
				{name: "create two GPU instances with a canary deployment", inputs: svCanary(svImage), want: created},
				{name: "new image: deployed as a 10% canary with its alarm", inputs: svCanary(svImage2), want: updated, check: func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
					if err := wantConfigs(1)(ctx, h, f); err != nil {
						return err
					}
					return wantCanary("conf-sv-can")(ctx, h, f)
				}},
				{name: "canary on one instance variant of two: warned that it falls back to all at once", inputs: svInputs("conf-sv-can", svImage, map[string]any{
					"variants": []any{
						map[string]any{"name": "primary", "instance_type": "ml.g6.xlarge", "initial_instance_count": 2},
						map[string]any{"name": "shadow", "instance_type": "ml.g6.xlarge", "initial_instance_count": 1},
					},
					"deployment": svCanaryDeployment,
				}), want: updated, warnings: []string{"multi-variant rolling"}},
			},
		},
		{
			name: "serving_endpoint/serverless", kind: servingEndpoint, resource: "conf-sv-sl", residency: awsManagedKeys,
			steps: []step{
				{name: "create serverless", inputs: svServerless(2048), want: created, check: wantConfigs(1)},
				{name: "more memory: a new config in place", inputs: svServerless(4096), want: updated, check: wantConfigs(1)},
				{name: "serverless and instance variants mixed: refused, zero writes", inputs: svInputs("conf-sv-sl", svImage, map[string]any{
					"variants": []any{
						map[string]any{"name": "small", "serverless": map[string]any{"memory_size_mb": 2048, "max_concurrency": 5}},
						map[string]any{"name": "big", "instance_type": "ml.m5.large", "initial_instance_count": 1},
					},
				}), want: refused, messages: []string{"serverless", "instance variants"}, noWrites: true},
			},
		},
		{
			name: "serving_endpoint/disappears", kind: servingEndpoint, resource: "conf-sv-gone", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: svInputs("conf-sv-gone", svImage, nil), want: created},
				{name: "deleted outside: created again, the old config and model gone", outOfBand: deleteEndpoint("conf-sv-gone"), inputs: svInputs("conf-sv-gone", svImage, nil),
					want: created, check: wantConfigs(1)},
			},
		},
		{
			name: "serving_endpoint/foreign", kind: servingEndpoint, resource: "conf-sv-for", residency: awsManagedKeys,
			steps: []step{
				{name: "an endpoint of the name made outside: refused at plan, zero writes", outOfBand: foreignEndpoint("conf-sv-for"), inputs: svInputs("conf-sv-for", svImage, nil),
					want: refused, messages: []string{"already exists", "import it"}, noWrites: true},
			},
		},
		{
			name: "serving_endpoint/network", kind: servingEndpoint, resource: "conf-sv-net", residency: awsManagedKeys,
			steps: []step{
				{name: "subnet in an excluded zone refused, zero writes", residency: excludeAz3, inputs: svNetwork("mec1-az3", nil),
					want: refused, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
				{name: "in the VPC, network-isolated by default", inputs: svNetwork("mec1-az1", nil), want: created, check: wantServingNetwork("conf-sv-net", true, "mec1-az1")},
				{name: "model moved outside to one not isolated: deployed isolated again", outOfBand: serveOpenModel("conf-sv-net"), inputs: svNetwork("mec1-az1", nil),
					want: updated, check: wantServingNetwork("conf-sv-net", true, "mec1-az1")},
				{name: "isolation off: a new model, in place", inputs: svNetwork("mec1-az1", false), want: updated, check: wantServingNetwork("conf-sv-net", false, "mec1-az1")},
				{name: "subnet in an excluded zone known only at apply: refused at apply, zero writes", residency: excludeAz3, inputs: svNetwork("mec1-az3", false, true),
					want: refused, refusedAtApply: true, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
			},
		},
		{
			name: "serving_endpoint/autoscaling", kind: servingEndpoint, resource: "conf-sv-as", residency: awsManagedKeys,
			steps: []step{
				{name: "create with autoscaling: registered", inputs: svScaled(100), want: created, check: wantScaling("conf-sv-as", 1, 4, 100)},
				{name: "scaled within bounds outside: no change", outOfBand: scaleVariant("conf-sv-as", "primary", 3), inputs: svScaled(100), want: noChange},
				{name: "new target: policy updated in place, no new config", inputs: svScaled(250), want: updated, check: func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
					if err := wantConfigs(1)(ctx, h, f); err != nil {
						return err
					}
					return wantScaling("conf-sv-as", 1, 4, 250)(ctx, h, f)
				}},
			},
		},
	}
}

// svScaled is the autoscaling scenario's endpoint: one ml.m5.large variant
// scaled between 1 and 4 on target invocations per instance (a whole
// number: the neutral inputs carry no float).
func svScaled(target int) func(*fixtures) map[string]any {
	return svInputs("conf-sv-as", svImage, map[string]any{
		"variants": []any{map[string]any{"name": "primary", "instance_type": "ml.m5.large", "initial_instance_count": 1,
			"autoscaling": map[string]any{"min_capacity": 1, "max_capacity": 4, "target_invocations_per_instance": target}}},
	})
}

// wantScaling checks the variant's scalable target and target-tracking
// policy in Application Auto Scaling.
func wantScaling(endpoint string, minC, maxC int32, target float64) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		id := "endpoint/" + endpoint + "/variant/primary"
		ts, err := c.AppAutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceIds: []string{id}})
		if err != nil {
			return err
		}
		if len(ts.ScalableTargets) != 1 || aws.ToInt32(ts.ScalableTargets[0].MinCapacity) != minC || aws.ToInt32(ts.ScalableTargets[0].MaxCapacity) != maxC {
			return fmt.Errorf("scalable targets of %s: %+v, want min %d max %d", id, ts.ScalableTargets, minC, maxC)
		}
		ps, err := c.AppAutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(id)})
		if err != nil {
			return err
		}
		for _, p := range ps.ScalingPolicies {
			if tt := p.TargetTrackingScalingPolicyConfiguration; tt != nil && aws.ToString(p.ResourceId) == id && aws.ToFloat64(tt.TargetValue) == target {
				return nil
			}
		}
		return fmt.Errorf("no target-tracking policy on %s with target %g (%d policies)", id, target, len(ps.ScalingPolicies))
	}
}

// wantConfigs checks how many endpoint configs exist: an update deletes the
// old one once the new one serves.
func wantConfigs(n int) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(_ context.Context, h *acctest.Harness, _ *fixtures) error {
		if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != n {
			return fmt.Errorf("endpoint configs %v, want %d", cs, n)
		}
		return nil
	}
}

// rollBack makes SageMaker roll every update back with reason ("" ends it).
func rollBack(reason string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(_ *testing.T, h *acctest.Harness, _ *fixtures) { h.SageMakerEndpoints.RollBack(reason) }
}

// scaleVariant changes a variant's instance count outside the front end.
func scaleVariant(endpoint, variant string, count int) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		if err := h.SageMakerEndpoints.ScaleVariant(acctest.Region, endpoint, variant, count); err != nil {
			t.Fatal(err)
		}
	}
}

var svCanaryDeployment = map[string]any{
	"traffic_routing": "canary", "size_type": "capacity_percent", "size_value": 10, "wait_seconds": 300,
	"termination_wait_seconds": 120, "rollback_alarms": []any{"fraud-p99-latency"},
}

// svCanary is the canary scenario's endpoint: two GPU instances, updated as
// a 10% canary with a rollback alarm.
func svCanary(image string) func(*fixtures) map[string]any {
	return svInputs("conf-sv-can", image, map[string]any{
		"variants":   []any{map[string]any{"name": "primary", "instance_type": "ml.g6.xlarge", "initial_instance_count": 2}},
		"deployment": svCanaryDeployment,
	})
}

// svServerless is the serverless scenario's endpoint.
func svServerless(memory int) func(*fixtures) map[string]any {
	return svInputs("conf-sv-sl", svImage, map[string]any{
		"variants": []any{map[string]any{"name": "small", "serverless": map[string]any{"memory_size_mb": memory, "max_concurrency": 5}}},
	})
}

// wantCanary checks the deployment UpdateEndpoint carried: canary of 10%
// capacity, 300 s between steps, 120 s termination wait, one rollback alarm.
func wantCanary(endpoint string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
		if err != nil {
			return err
		}
		d := out.LastDeploymentConfig
		if d == nil || d.BlueGreenUpdatePolicy == nil || d.BlueGreenUpdatePolicy.TrafficRoutingConfiguration == nil {
			return fmt.Errorf("UpdateEndpoint carried no blue/green deployment: %+v", d)
		}
		bg, r := d.BlueGreenUpdatePolicy, d.BlueGreenUpdatePolicy.TrafficRoutingConfiguration
		if r.Type != "CANARY" || r.CanarySize == nil || r.CanarySize.Type != "CAPACITY_PERCENT" || aws.ToInt32(r.CanarySize.Value) != 10 ||
			aws.ToInt32(r.WaitIntervalInSeconds) != 300 || aws.ToInt32(bg.TerminationWaitInSeconds) != 120 {
			return fmt.Errorf("deployment sent: %+v, routing %+v", bg, r)
		}
		if d.AutoRollbackConfiguration == nil || len(d.AutoRollbackConfiguration.Alarms) != 1 || aws.ToString(d.AutoRollbackConfiguration.Alarms[0].AlarmName) != "fraud-p99-latency" {
			return fmt.Errorf("rollback alarms sent: %+v", d.AutoRollbackConfiguration)
		}
		return nil
	}
}

// deleteEndpoint deletes the endpoint outside the front end (its config and
// model stay) and waits until it is gone.
func deleteEndpoint(name string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if _, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}); err != nil {
				return
			}
		}
		t.Fatalf("endpoint %s not gone after its delete", name)
	}
}

// foreignEndpoint makes an endpoint of the name outside the front end,
// without the ownership tag.
func foreignEndpoint(name string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
			EndpointConfigName: aws.String("theirs"),
			ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("a"), ModelName: aws.String("m"), InstanceType: "ml.m5.large", InitialInstanceCount: aws.Int32(1)}},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String("theirs")}); err != nil {
			t.Fatal(err)
		}
	}
}

// svNetwork is the network scenario's endpoint: in the default VPC's
// subnet of zone, with its default group; isolation set when not nil
// (a bool); unknown makes the subnet known only at apply.
func svNetwork(zone string, isolation any, unknownSubnet ...bool) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		var subnet any = f.defaultSubnets[zone]
		if len(unknownSubnet) > 0 && unknownSubnet[0] {
			subnet = unknown{subnet}
		}
		over := map[string]any{"vpc_config": map[string]any{"subnet_ids": []any{subnet}, "security_group_ids": []any{f.defaultGroup}}}
		if isolation != nil {
			over["network_isolation"] = isolation
		}
		return svInputs("conf-sv-net", svImage, over)(f)
	}
}

// wantServingNetwork checks the model the endpoint serves: its network
// isolation and its subnet, the default VPC's in zone.
func wantServingNetwork(endpoint string, isolated bool, zone string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		m, err := h.ServingModel(ctx, endpoint)
		if err != nil {
			return err
		}
		if aws.ToBool(m.EnableNetworkIsolation) != isolated {
			return fmt.Errorf("model %s: EnableNetworkIsolation %v, want %v", aws.ToString(m.ModelName), aws.ToBool(m.EnableNetworkIsolation), isolated)
		}
		if m.VpcConfig == nil || len(m.VpcConfig.Subnets) != 1 || m.VpcConfig.Subnets[0] != f.defaultSubnets[zone] ||
			len(m.VpcConfig.SecurityGroupIds) != 1 || m.VpcConfig.SecurityGroupIds[0] != f.defaultGroup {
			return fmt.Errorf("model %s: VpcConfig %+v, want subnet %s and group %s", aws.ToString(m.ModelName), m.VpcConfig, f.defaultSubnets[zone], f.defaultGroup)
		}
		return nil
	}
}

// serveOpenModel moves the endpoint outside the front end to a model that
// is not network-isolated.
func serveOpenModel(endpoint string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		if err := h.ServeOpenModel(context.Background(), endpoint); err != nil {
			t.Fatal(err)
		}
	}
}
