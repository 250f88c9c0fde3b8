package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TerminateGPUNodesAPI is what TerminateGPUNodes needs.
type TerminateGPUNodesAPI interface {
	TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, opts ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

// TerminateGPUNodes terminates instances, 1000 a call. Instances already gone
// are not an error.
func TerminateGPUNodes(ctx context.Context, api TerminateGPUNodesAPI, ids []string) error {
	for chunk := range slices.Chunk(ids, 1000) {
		_, err := api.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: chunk})
		if err != nil && apiErrorCode(err) != "InvalidInstanceID.NotFound" {
			return fmt.Errorf("terminating nodes: %w", err)
		}
	}
	return nil
}

// DeleteGPUClusterAPI is what DeleteGPUCluster needs.
type DeleteGPUClusterAPI interface {
	FindGPUClusterAPI
	TerminateGPUNodesAPI
	DeletePlacementGroup(ctx context.Context, in *ec2.DeletePlacementGroupInput, opts ...func(*ec2.Options)) (*ec2.DeletePlacementGroupOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// DeleteGPUClusterHooks run during DeleteGPUCluster; either may be nil.
type DeleteGPUClusterHooks struct {
	// BeforeTerminate runs once ownership is proven, before the nodes
	// (the running ones the caller owns) are terminated: an error stops
	// the delete with nothing terminated.
	BeforeTerminate func(ctx context.Context, c *GPUCluster, nodes []GPUNode) error
	// AfterNodes runs once the nodes are gone, before the placement group
	// and the launch template (whose tags say what else the cluster owns)
	// are deleted.
	AfterNodes func(ctx context.Context, c *GPUCluster) error
}

// DeleteGPUCluster removes cluster name: it terminates every node found by
// the cluster tag (whatever state recorded) and waits until they are gone,
// then deletes the placement group when the cluster owns it, then the launch
// template. A cluster already gone is not an error. With owner set (the
// creation token the caller recorded), a cluster carrying another token is
// an *OwnershipError and nothing is deleted; nodes carrying another token
// are left alone.
// hooks say what else runs on the way.
func DeleteGPUCluster(ctx context.Context, api DeleteGPUClusterAPI, name, owner string, o NodeWaitOptions, hooks DeleteGPUClusterHooks) error {
	c, err := FindGPUCluster(ctx, api, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if owner != "" && c.CreationToken != "" && c.CreationToken != owner {
		return &OwnershipError{Resource: "GPU cluster " + name, Token: c.CreationToken}
	}
	mine := func(n GPUNode) bool { return owner == "" || n.CreationToken == "" || n.CreationToken == owner }
	var ids, live []string
	var nodes []GPUNode
	for _, n := range c.Nodes {
		if mine(n) {
			ids, live = append(ids, n.InstanceID), append(live, n.InstanceID)
			nodes = append(nodes, n)
		}
	}
	if hooks.BeforeTerminate != nil && len(nodes) > 0 {
		if err := hooks.BeforeTerminate(ctx, c, nodes); err != nil {
			return err
		}
	}
	for _, n := range c.Gone {
		if n.State == "shutting-down" && mine(n) {
			ids = append(ids, n.InstanceID)
		}
	}
	if err := TerminateGPUNodes(ctx, api, live); err != nil {
		return err
	}
	if err := WaitGPUNodesTerminated(ctx, api, ids, o); err != nil {
		return err
	}
	if hooks.AfterNodes != nil {
		if err := hooks.AfterNodes(ctx, c); err != nil {
			return err
		}
	}
	if c.PlacementGroupOwned && c.PlacementGroupState != "" {
		_, err := api.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String(c.PlacementGroupName)})
		if err != nil && apiErrorCode(err) != "InvalidPlacementGroup.Unknown" {
			return fmt.Errorf("deleting placement group %s: %w", c.PlacementGroupName, err)
		}
	}
	if c.LaunchTemplateID != "" {
		_, err := api.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(c.LaunchTemplateID)})
		if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateId.NotFound" {
			return fmt.Errorf("deleting launch template %s: %w", c.LaunchTemplateID, err)
		}
	}
	return nil
}
