package cloud

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// hashTemplate is a node template as the provider made them before the
// metadata hop limit could be set.
func hashTemplate() NodeTemplate {
	return NodeTemplate{InstanceType: "p5en.48xlarge", ImageID: "ami-0123456789abcdef0", RootDeviceName: "/dev/xvda", KMSKeyID: "arn:aws:kms:me-central-1:123456789012:key/k",
		RootVolume: Volume{SizeGiB: 200}, DataVolumes: []Volume{{SizeGiB: 1000}}, UserData: "#!/bin/sh\n", Capacity: Capacity{Type: CapacityOnDemand}, PlacementGroup: "mlplatform-train",
		Tags: map[string]string{"team": "ml"}}
}

// TestNodeHashesAcrossTheHopLimit: the hashes a provider upgrade finds on
// existing nodes and templates (computed by the provider before the hop
// limit could be set, when every template held 2) still match, so an
// upgrade rolls no node; the hop limit changes no node hash (it changes in
// place), only the template hash (a new launch template version).
func TestNodeHashesAcrossTheHopLimit(t *testing.T) {
	const (
		oldNodeHash, oldTemplateHash         = "6635d7962a1c07d0", "1242dcb09972c59a"
		oldFootprintHash, oldFootprintInstHs = "90af3f1aeb28f45c", "0f7f77230c386f0b"
	)
	for _, hop := range []int32{0, 1, 2, 3, 64} {
		tm := hashTemplate()
		tm.MetadataHopLimit = hop
		ft := FootprintTemplate{Node: tm, SecurityGroupIDs: []string{"sg-1"}}
		if got := tm.NodeHash(); got != oldNodeHash {
			t.Errorf("hop limit %d: NodeHash = %s, want %s (the nodes would roll)", hop, got, oldNodeHash)
		}
		if got := ft.InstanceHash(); got != oldFootprintInstHs {
			t.Errorf("hop limit %d: footprint InstanceHash = %s, want %s (the instances would roll)", hop, got, oldFootprintInstHs)
		}
		legacy := tm.HopLimit() == LegacyMetadataHopLimit
		if got := tm.TemplateHash(); (got == oldTemplateHash) != legacy {
			t.Errorf("hop limit %d: TemplateHash = %s; the old template's %s must match exactly when the limit is 2", hop, got, oldTemplateHash)
		}
		if got := ft.Hash(); (got == oldFootprintHash) != legacy {
			t.Errorf("hop limit %d: footprint Hash = %s; the old template's %s must match exactly when the limit is 2", hop, got, oldFootprintHash)
		}
	}
	a, b := hashTemplate(), hashTemplate()
	a.MetadataHopLimit, b.MetadataHopLimit = 0, 1
	if a.TemplateHash() != b.TemplateHash() {
		t.Error("hop limit 0 (the default) and 1 hash differently")
	}
}

// TestLaunchTemplateHopLimit: the template and every launch carry the hop
// limit (1 by default), with IMDSv2 required and instance tags readable.
func TestLaunchTemplateHopLimit(t *testing.T) {
	for _, tc := range []struct{ set, want int32 }{{0, 1}, {1, 1}, {2, 2}, {64, 64}} {
		tm := hashTemplate()
		tm.MetadataHopLimit = tc.set
		m := tm.launchTemplateData(nil).MetadataOptions
		if got := aws.ToInt32(m.HttpPutResponseHopLimit); got != tc.want || m.HttpTokens != "required" || m.InstanceMetadataTags != "enabled" {
			t.Errorf("set %d: template metadata options %+v, want hop limit %d, tokens required, tags enabled", tc.set, m, tc.want)
		}
		r := tm.instanceMetadataOptions()
		if got := aws.ToInt32(r.HttpPutResponseHopLimit); got != tc.want || r.HttpTokens != "required" || r.InstanceMetadataTags != "enabled" {
			t.Errorf("set %d: launch metadata options %+v, want hop limit %d", tc.set, r, tc.want)
		}
	}
}
