package platform

import (
	"context"
	"fmt"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// ImportGPUCluster reads the declaration of an existing cluster back from its
// launch template and first node, the way a user would have written it:
// defaults are left unset (gp3 volumes, default device names, on-demand
// capacity), so that a plan after import shows no change for them. What the
// template does not hold (rollout, capacity retry, zone fallback, the SSM
// name an image was resolved from) stays at its zero value.
func (e *Env) ImportGPUCluster(ctx context.Context, c *GPUCluster) (GPUClusterSpec, error) {
	t, err := e.findGPUClusterTemplate(ctx, c)
	if err != nil {
		return GPUClusterSpec{}, fmt.Errorf("reading its launch template %s: %w", cloud.GPUClusterResourceName(c.Name), err)
	}
	s := importedGPUClusterSpec(c, t)
	if parts, err := ParseBootstrap(s.UserData); err == nil {
		// A validated cluster's user data is the bootstrap around the
		// user's own.
		s.UserData = parts.UserData
	}
	return s, nil
}

func importedGPUClusterSpec(c *GPUCluster, t cloud.NodeTemplate) GPUClusterSpec {
	s := GPUClusterSpec{
		Name:            c.Name,
		InstanceType:    t.InstanceType,
		NodeCount:       len(c.Nodes),
		Image:           t.ImageID,
		InstanceProfile: t.InstanceProfile,
		KMSKeyARN:       t.KMSKeyID,
		UserData:        t.UserData,
		PlacementGroup:  t.PlacementGroup,
		Tags:            t.Tags,
		RootVolume:      declaredVolume(Volume(t.RootVolume)),
		// As the template holds it (a template without metadata options
		// holds EC2's default, 1).
		MetadataHopLimit: int(t.HopLimit()),
	}
	if t.Capacity.Type != "" && t.Capacity.Type != cloud.CapacityOnDemand {
		s.Capacity = Capacity(t.Capacity)
	}
	if s.RootVolume.SizeGiB == 0 {
		s.RootVolume = Volume{} // the image's root volume as it is
	}
	for i, cv := range t.DataVolumes {
		v := declaredVolume(Volume(cv))
		if v.DeviceName == cloud.DataVolumeDevice(i) {
			v.DeviceName = ""
		}
		s.DataVolumes = append(s.DataVolumes, v)
	}
	if len(c.Nodes) > 0 {
		n := c.Nodes[0]
		s.ZoneID, s.Zone, s.SubnetID = n.ZoneID, n.Zone, n.SubnetID
		efa := n.EFAInterfaces
		s.EFAInterfaces = &efa
		s.SecurityGroupIDs = n.SecurityGroupIDs
	}
	return s
}

// declaredVolume leaves the default volume type unset.
func declaredVolume(v Volume) Volume {
	if v.Type == "gp3" {
		v.Type = ""
	}
	return v
}
