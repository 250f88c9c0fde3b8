package platform

import (
	"maps"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// GPUClusterDrift is what a refresh found changed outside the provider, in
// the terms of the declared attributes, so that each shows in the next plan
// and its apply repairs it.
type GPUClusterDrift struct {
	// NodeCount counts the healthy nodes (running or starting): a node lost,
	// stopped or stopping outside lowers it, and the apply replaces it.
	NodeCount int
	// TagsAll is what the nodes carry when a node's tags differ from
	// tagsAll (a tag changed or removed outside); nil when none differs.
	TagsAll map[string]string
	// PlacementGroupMissing: the cluster's own placement group was deleted.
	PlacementGroupMissing bool
	// LaunchTemplateMissing: the cluster's launch template was deleted.
	LaunchTemplateMissing bool
}

// ReadGPUClusterDrift compares what exists with what state recorded
// (tagsAll: the tags every node should carry).
func ReadGPUClusterDrift(c *GPUCluster, tagsAll map[string]string) GPUClusterDrift {
	var d GPUClusterDrift
	for _, n := range c.Nodes {
		if healthyNode(n) {
			d.NodeCount++
		}
	}
	d.PlacementGroupMissing = c.PlacementGroupOwned && c.PlacementGroupState == "" && c.LaunchTemplateID != ""
	d.LaunchTemplateMissing = c.LaunchTemplateID == ""
	for _, n := range c.Nodes {
		if n.Tags == nil {
			continue
		}
		user := map[string]string{}
		for k, v := range n.Tags {
			// The gate's challenge and a leave request are the
			// provider's own, not the user's.
			if !strings.HasPrefix(k, cloud.ReservedTagPrefix) && !strings.HasPrefix(k, "aws:") && k != ChallengeTag && k != SlurmLeaveTag {
				user[k] = v
			}
		}
		if !maps.Equal(user, tagsAll) {
			d.TagsAll = user
			break
		}
	}
	return d
}

// healthyNode reports whether a node counts toward node_count: running or
// starting. A stopped or stopping node is replaced by the next apply.
func healthyNode(n GPUNode) bool { return n.State == "running" || n.State == "pending" }
