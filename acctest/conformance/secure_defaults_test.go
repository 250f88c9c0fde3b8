package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/mlplatform/mlplatform/acctest"
)

// secureDefaultScenarios: customer managed keys required by default for
// jurisdiction AE, and the instance metadata hop limit (default 1, set per
// resource, changed in place).
func secureDefaultScenarios() []scenario {
	// hops is a one-node cluster on the AMI itself (so that an import reads
	// back every input) with metadata_hop_limit = limit (0: unset).
	hops := func(limit int) func(*fixtures) map[string]any {
		return func(f *fixtures) map[string]any {
			in := map[string]any{
				"name":          "conf-hops",
				"instance_type": "g6.xlarge",
				"node_count":    1,
				"zone_id":       "mec1-az1",
				"image":         f.amiA,
				"root_volume":   map[string]any{"size_gib": 100},
				"tags":          map[string]any{"team": "ml"},
			}
			if limit != 0 {
				in["metadata_hop_limit"] = limit
			}
			return in
		}
	}
	return []scenario{
		{
			name: "gpu_cluster/metadata_hop_limit", kind: gpuCluster, resource: "conf-hops", residency: awsManagedKeys,
			steps: []step{
				{name: "create with metadata_hop_limit 2", inputs: hops(2), want: created, check: wantHopLimit("conf-hops", 2, false)},
				{name: "removed: the default 1, in place on the same node", inputs: hops(0), want: updated,
					warnings: []string{"sets the instance metadata hop limit from 2 to 1 in place on the running nodes"}, check: wantHopLimit("conf-hops", 1, true)},
				{name: "changed outside: drift repaired in place", outOfBand: setHopLimitOutside("conf-hops", 2), inputs: hops(0), want: updated,
					check: wantHopLimit("conf-hops", 1, true)},
				{name: "set to 3 in place", inputs: hops(3), want: updated, check: wantHopLimit("conf-hops", 3, true)},
				// The import's read-back of the limit is in each front end's
				// own tests (ImportStateVerify; Pulumi's Read): the plan
				// after an import of a cluster is not empty for other
				// reasons (the emulator's default security group).
				{name: "import", inputs: hops(3), importID: "conf-hops", want: imported, check: wantHopLimit("conf-hops", 3, true)},
			},
		},
		{
			// The emulator's Auto Scaling does not give the instances it
			// launches their template's metadata options (AWS does): the
			// create is checked on the template, the change on both.
			name: "cpu_footprint/metadata_hop_limit", kind: cpuFootprint, resource: "conf-cpu-hops", residency: awsManagedKeys,
			steps: []step{
				{name: "create with metadata_hop_limit 2", inputs: cpuHops(2), want: created, check: wantTemplateHopLimit("mlplatform-cpu-conf-cpu-hops", 2)},
				{name: "removed: the default 1, in place on the same instance", inputs: cpuHops(0), want: updated,
					warnings: []string{"sets the instance metadata hop limit from 2 to 1 in place on the running instances"},
					check:    allOf(wantTemplateHopLimit("mlplatform-cpu-conf-cpu-hops", 1), wantFootprintHopLimit("mlplatform-cpu-conf-cpu-hops", 1))},
				{name: "set to 3 in place", inputs: cpuHops(3), want: updated,
					check: allOf(wantTemplateHopLimit("mlplatform-cpu-conf-cpu-hops", 3), wantFootprintHopLimit("mlplatform-cpu-conf-cpu-hops", 3))},
				{name: "import", inputs: cpuHops(3), importID: "conf-cpu-hops", want: imported,
					check: allOf(wantTemplateHopLimit("mlplatform-cpu-conf-cpu-hops", 3), wantFootprintHopLimit("mlplatform-cpu-conf-cpu-hops", 3))},
			},
		},
		{
			name: "gpu_cluster/customer managed keys by default", kind: gpuCluster, resource: "conf-cmk",
			steps: []step{
				{name: "no key under the AE default refused, zero writes", inputs: gpuInputs("conf-cmk", nil), want: refused,
					messages: []string{"kms-customer-managed", "jurisdiction AE requires customer managed keys by default", "= false in the provider configuration"}, noWrites: true},
				{name: "a customer managed key: created", inputs: func(f *fixtures) map[string]any {
					return gpuInputs("conf-cmk", map[string]any{"kms_key_arn": f.key})(f)
				}, want: created, check: wantNodes("conf-cmk", 1, "mec1-az1", "")},
			},
		},
	}
}

// wantHopLimit checks that every live node of cluster answers with hop
// limit want; same: they are the nodes an earlier check remembered (a hop
// limit change must not roll them). It remembers the nodes.
func wantHopLimit(cluster string, want int32, same bool) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		nodes, err := liveNodes(ctx, h, cluster)
		if err != nil {
			return err
		}
		var ids []string
		for _, n := range nodes {
			id := aws.ToString(n.InstanceId)
			ids = append(ids, id)
			if n.MetadataOptions == nil || aws.ToInt32(n.MetadataOptions.HttpPutResponseHopLimit) != want {
				return fmt.Errorf("node %s: metadata options %+v, want hop limit %d", id, n.MetadataOptions, want)
			}
		}
		slices.Sort(ids)
		if len(ids) == 0 {
			return fmt.Errorf("no live node of %s", cluster)
		}
		if same && !slices.Equal(ids, f.nodes) {
			return fmt.Errorf("nodes %v, want the same nodes as before, %v: a hop limit change is made in place", ids, f.nodes)
		}
		f.nodes = ids
		return nil
	}
}

// setHopLimitOutside changes the hop limit of the cluster's nodes outside
// the front end.
func setHopLimitOutside(cluster string, limit int32) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		nodes, err := liveNodes(ctx, h, cluster)
		if err != nil || len(nodes) == 0 {
			t.Fatalf("no node of %s: %v", cluster, err)
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if _, err := c.EC2.ModifyInstanceMetadataOptions(ctx, &ec2.ModifyInstanceMetadataOptionsInput{InstanceId: n.InstanceId, HttpPutResponseHopLimit: aws.Int32(limit)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cpuHops is importCPU's footprint named conf-cpu-hops, with
// metadata_hop_limit = limit (0: unset).
func cpuHops(limit int) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		in := importCPU(f)
		in["name"] = "conf-cpu-hops"
		if limit != 0 {
			in["metadata_hop_limit"] = limit
		}
		return in
	}
}

func allOf(checks ...func(context.Context, *acctest.Harness, *fixtures) error) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		for _, c := range checks {
			if err := c(ctx, h, f); err != nil {
				return err
			}
		}
		return nil
	}
}

// wantTemplateHopLimit checks the hop limit the latest version of launch
// template name gives what it launches.
func wantTemplateHopLimit(name string, want int32) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String(name), Versions: []string{"$Latest"}})
		if err != nil || len(out.LaunchTemplateVersions) != 1 {
			return fmt.Errorf("launch template %s: %v", name, err)
		}
		if m := out.LaunchTemplateVersions[0].LaunchTemplateData.MetadataOptions; m == nil || aws.ToInt32(m.HttpPutResponseHopLimit) != want {
			return fmt.Errorf("launch template %s: metadata options %+v, want hop limit %d", name, m, want)
		}
		return nil
	}
}

// wantFootprintHopLimit checks the hop limit of group's instances, and
// that they are the instances an earlier check remembered, if any (a hop
// limit change is made in place). It remembers them.
func wantFootprintHopLimit(group string, want int32) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		out, err := describeGroup(ctx, h, group)
		if err != nil || len(out.AutoScalingGroups) != 1 {
			return fmt.Errorf("group %s: %v", group, err)
		}
		var ids []string
		for _, in := range out.AutoScalingGroups[0].Instances {
			ids = append(ids, aws.ToString(in.InstanceId))
		}
		slices.Sort(ids)
		if len(ids) == 0 {
			return fmt.Errorf("group %s has no instances", group)
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		inst, err := c.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return err
		}
		for _, r := range inst.Reservations {
			for _, i := range r.Instances {
				if i.MetadataOptions == nil || aws.ToInt32(i.MetadataOptions.HttpPutResponseHopLimit) != want {
					return fmt.Errorf("instance %s: metadata options %+v, want hop limit %d", aws.ToString(i.InstanceId), i.MetadataOptions, want)
				}
			}
		}
		if f.nodes != nil && !slices.Equal(ids, f.nodes) {
			return fmt.Errorf("instances %v, want the same as before, %v: a hop limit change is made in place", ids, f.nodes)
		}
		f.nodes = ids
		return nil
	}
}
