package pulumi

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

const testImage = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"

// gpuClusterInputs is a p5en cluster of n nodes in mec1-az1.
func gpuClusterInputs(name string, n int, extra map[string]property.Value) property.Map {
	m := map[string]property.Value{
		"name":          property.New(name),
		"instanceType":  property.New("p5en.48xlarge"),
		"nodeCount":     property.New(float64(n)),
		"zoneId":        property.New("mec1-az1"),
		"image":         property.New(testImage),
		"rootVolume":    property.New(property.NewMap(map[string]property.Value{"sizeGib": property.New(200.0)})),
		"tags":          property.New(property.NewMap(map[string]property.Value{"team": property.New("ml-platform")})),
		"capacityRetry": property.New(property.NewMap(map[string]property.Value{"attempts": property.New(2.0), "initialDelay": property.New("10ms")})),
	}
	for k, v := range extra {
		m[k] = v
	}
	return property.NewMap(m)
}

// liveNodes counts the cluster's instances that are not terminated.
func liveNodes(t *testing.T, h *acctest.Harness, cluster string) int {
	t.Helper()
	c, err := h.Clients(context.Background(), acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:mlplatform:cluster"), Values: []string{cluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range out.Reservations {
		n += len(r.Instances)
	}
	return n
}

func TestGpuCluster_lifecycle(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("GpuCluster", "train")

	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: gpuClusterInputs("train", 2, nil)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	preview, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if v, ok := preview.Properties.GetOk("nodeIds"); ok && !v.IsComputed() && !v.IsNull() {
		t.Errorf("nodeIds in preview = %v, want unknown (absent)", v)
	}
	assertNoWrites(t, h)

	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.ID != "train" {
		t.Errorf("id = %q, want train", created.ID)
	}
	if n := len(created.Properties.Get("nodeIds").AsArray().AsSlice()); n != 2 {
		t.Errorf("nodeIds has %d entries, want 2", n)
	}
	if z := created.Properties.Get("placementZoneId").AsString(); z != "mec1-az1" {
		t.Errorf("placementZoneId = %q", z)
	}
	if img := created.Properties.Get("imageId").AsString(); !strings.HasPrefix(img, "ami-") {
		t.Errorf("imageId = %q, want ami-...", img)
	}
	if n := liveNodes(t, h, "train"); n != 2 {
		t.Errorf("%d live nodes, want 2", n)
	}

	// Refresh is clean.
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil || diff.HasChanges {
		t.Fatalf("diff after refresh: %v %+v", err, diff.DetailedDiff)
	}

	// Import: a Read with nothing but the id reads the declaration back
	// from the launch template and the nodes.
	imported, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	for k, want := range map[string]string{"instanceType": "p5en.48xlarge", "zoneId": "mec1-az1", "name": "train"} {
		if v, ok := imported.Inputs.GetOk(k); !ok || !v.IsString() || v.AsString() != want {
			t.Errorf("imported %s = %v, want %q", k, v, want)
		}
	}
	if v := imported.Inputs.Get("nodeCount"); !v.IsNumber() || v.AsNumber() != 2 {
		t.Errorf("imported nodeCount = %v, want 2", v)
	}
	if v := imported.Inputs.Get("rootVolume"); !v.IsMap() || v.AsMap().Get("sizeGib").AsNumber() != 200 {
		t.Errorf("imported rootVolume = %v, want sizeGib 200", v)
	}
	if v, ok := imported.Inputs.GetOk("capacity"); ok && !v.IsNull() {
		t.Errorf("imported capacity = %v, want unset (on-demand)", v)
	}

	// Scale to 3 in place.
	check3, err := s.Check(p.CheckRequest{Urn: u, State: check.Inputs, Inputs: gpuClusterInputs("train", 3, nil)})
	if err != nil || len(check3.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check3.Failures)
	}
	diff, err = s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check3.Inputs})
	if err != nil || !diff.HasChanges || diff.DetailedDiff["nodeCount"].Kind != p.Update {
		t.Fatalf("diff: %v %+v", err, diff)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check3.Inputs})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if n := len(updated.Properties.Get("nodeIds").AsArray().AsSlice()); n != 3 {
		t.Errorf("nodeIds has %d entries after update, want 3", n)
	}

	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if n := liveNodes(t, h, "train"); n != 0 {
		t.Errorf("%d live nodes after delete, want 0", n)
	}
	// Gone from AWS: Read says so.
	gone, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: check3.Inputs})
	if err != nil || gone.ID != "" {
		t.Errorf("read after delete: id %q, %v; want gone", gone.ID, err)
	}
}

func TestGpuCluster_checkRejects(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	s := newServer(t, h, map[string]property.Value{"excludedZoneIds": strings_("mec1-az3")})
	for _, tc := range []struct {
		name     string
		inputs   property.Map
		property string
		reason   string
	}{
		{"excluded zone", gpuClusterInputs("nope", 2, map[string]property.Value{"zoneId": property.New("mec1-az3")}), "zoneId", "zone-excluded"},
		{"zone outside", gpuClusterInputs("nope", 2, map[string]property.Value{"zoneId": property.New(property.Null), "zone": property.New("eu-west-1a")}), "zone", "residency"},
		{"not a GPU type", gpuClusterInputs("nope", 2, map[string]property.Value{"instanceType": property.New("c7i.large")}), "instanceType", "has no GPU"},
		// Jurisdiction AE requires customer managed keys by default: the
		// failure names the property, the rule and the opt-out.
		{"no key under the AE default", gpuClusterInputs("nope", 2, nil), "kmsKeyArn",
			"kms-customer-managed"},
		{"no key: the opt-out in Pulumi's spelling", gpuClusterInputs("nope", 2, nil), "kmsKeyArn",
			"jurisdiction AE requires customer managed keys by default (residency.requireCustomerManagedKeys)"},
		{"no key: how to opt out", gpuClusterInputs("nope", 2, nil), "kmsKeyArn",
			"set residency.requireCustomerManagedKeys = false in the provider configuration"},
		{"bad delay", gpuClusterInputs("nope", 2, map[string]property.Value{"capacityRetry": property.New(property.NewMap(map[string]property.Value{"initialDelay": property.New("soon")}))}), "capacityRetry.initialDelay", "Invalid duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, err := s.Check(p.CheckRequest{Urn: urn("GpuCluster", "nope"), Inputs: tc.inputs})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			found := false
			for _, f := range check.Failures {
				if f.Property == tc.property && strings.Contains(f.Reason, tc.reason) {
					found = true
				}
			}
			if !found {
				t.Errorf("failures = %+v, want one on %s containing %q", check.Failures, tc.property, tc.reason)
			}
		})
	}
	assertNoWrites(t, h)
}
