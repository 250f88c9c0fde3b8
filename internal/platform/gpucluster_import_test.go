package platform

import (
	"reflect"
	"testing"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

func TestImportedGPUClusterSpec(t *testing.T) {
	c := &GPUCluster{Name: "train", Nodes: []GPUNode{
		{ZoneID: "mec1-az1", Zone: "me-central-1a", SubnetID: "subnet-1", EFAInterfaces: 16, SecurityGroupIDs: []string{"sg-1"}},
		{ZoneID: "mec1-az1", Zone: "me-central-1a", SubnetID: "subnet-1", EFAInterfaces: 16},
	}}
	tmpl := cloud.NodeTemplate{
		InstanceType: "p5en.48xlarge", ImageID: "ami-1", KMSKeyID: "arn:aws:kms:me-central-1:123456789012:key/k",
		PlacementGroup: "mlplatform-train", Tags: map[string]string{"team": "ml"},
		Capacity:    cloud.Capacity{Type: cloud.CapacityOnDemand},
		RootVolume:  cloud.Volume{SizeGiB: 500, Type: "gp3"},
		DataVolumes: []cloud.Volume{{DeviceName: cloud.DataVolumeDevice(0), SizeGiB: 4000, Type: "gp3", Throughput: 1000}, {DeviceName: "/dev/sdz", SizeGiB: 100, Type: "io2", IOPS: 3000}},
	}
	got := importedGPUClusterSpec(c, tmpl)
	efa := 16
	want := GPUClusterSpec{
		Name: "train", InstanceType: "p5en.48xlarge", NodeCount: 2, Image: "ami-1",
		KMSKeyARN: "arn:aws:kms:me-central-1:123456789012:key/k", PlacementGroup: "mlplatform-train", Tags: map[string]string{"team": "ml"},
		RootVolume:  Volume{SizeGiB: 500},
		DataVolumes: []Volume{{SizeGiB: 4000, Throughput: 1000}, {DeviceName: "/dev/sdz", SizeGiB: 100, Type: "io2", IOPS: 3000}},
		ZoneID:      "mec1-az1", Zone: "me-central-1a", SubnetID: "subnet-1", EFAInterfaces: &efa, SecurityGroupIDs: []string{"sg-1"},
		MetadataHopLimit: 1, // a template without metadata options: EC2's default
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("imported spec\n got %+v\nwant %+v", got, want)
	}

	tmpl.Capacity = cloud.Capacity{Type: cloud.CapacityCapacityReservation, ReservationID: "cr-0123456789abcdef0"}
	tmpl.RootVolume = cloud.Volume{Type: "gp3"}
	got = importedGPUClusterSpec(&GPUCluster{Name: "empty"}, tmpl)
	if got.Capacity != Capacity(tmpl.Capacity) || got.RootVolume != (Volume{}) || got.EFAInterfaces != nil || got.NodeCount != 0 {
		t.Errorf("reservation, image root volume, no nodes: %+v", got)
	}
}
