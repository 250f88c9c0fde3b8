package platform

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// ImportCPUFootprint rebuilds the record of an existing footprint from its
// launch template and group, for import: the type becomes an explicit
// instance_type (requirements cannot be read back), each scheduled action
// a schedule of its own, and the group's sizes, capacity, subnets and tags
// the declared ones. The decision (price, cost) is made again at the next
// plan.
func (e *Env) ImportCPUFootprint(ctx context.Context, f *CPUFootprint) (CPUFootprintRecord, error) {
	if f.LaunchTemplateID == "" || f.GroupName == "" {
		return CPUFootprintRecord{}, fmt.Errorf("importing CPU footprint %s: its launch template or Auto Scaling group is missing: %w", f.Name, ErrNotFound)
	}
	v := f.GroupTemplateVersion
	if v == 0 {
		v = f.LaunchTemplateVersion
	}
	t, err := cloud.FindFootprintTemplate(ctx, e.Clients.EC2, f.LaunchTemplateID, v)
	if err != nil {
		return CPUFootprintRecord{}, fmt.Errorf("importing CPU footprint %s: %w", f.Name, err)
	}
	n := t.Node
	s := CPUFootprintSpec{
		Name: f.Name, InstanceType: n.InstanceType, Size: f.Size, OnDemandBase: f.OnDemandBase,
		CapacityType: CapacityOnDemandOnly, SubnetIDs: slices.Clone(f.SubnetIDs),
		Image: n.ImageID, SecurityGroupIDs: t.SecurityGroupIDs, InstanceProfile: n.InstanceProfile,
		KMSKeyARN: n.KMSKeyID, RootVolume: Volume(n.RootVolume), UserData: n.UserData, CreationToken: f.CreationToken,
		MetadataHopLimit: int(n.HopLimit()),
	}
	if f.Spot {
		s.CapacityType = CapacitySpotMixed
	}
	for i, dv := range n.DataVolumes {
		vol := Volume(dv)
		if vol.DeviceName == cloud.DataVolumeDevice(i) {
			vol.DeviceName = ""
		}
		s.DataVolumes = append(s.DataVolumes, vol)
	}
	s.Tags = maps.Clone(f.Tags)
	for k, v := range e.DefaultTags {
		if s.Tags[k] == v {
			delete(s.Tags, k)
		}
	}
	s.Schedules = FoldScheduledActions(f.Size, f.ScheduledActions)
	types := f.InstanceTypes
	if len(types) == 0 {
		types = []string{n.InstanceType}
	}
	return CPUFootprintRecord{
		Spec: s, Decision: CPUDecision{InstanceType: n.InstanceType, Candidates: types}, InstanceTypes: slices.Clone(types),
		SubnetIDs: slices.Clone(f.SubnetIDs), ImageID: n.ImageID, TagsAll: maps.Clone(f.Tags),
		GroupName: f.GroupName, LaunchTemplateID: f.LaunchTemplateID, LaunchTemplateVersion: f.LaunchTemplateVersion, CreationToken: f.CreationToken,
	}, nil
}
