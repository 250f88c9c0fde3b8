package acctest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The node player for CPU footprints: it plays every instance of a
// footprint's Auto Scaling group as NodePlayer plays a GPU cluster's
// nodes (the profile from the launch template's user data, the real
// hwprobe, the report published to the emulator's S3, the challenges
// answered). The lifecycle-action double (RegisterAutoScalingLifecycle)
// holds the group's new instances in Pending:Wait until the gate or the
// approver completes their action: no node completes its own, and a
// bootstrap that tried would fail the player (completeLifecycle).

// completeLifecycle fails a node whose bootstrap completes its own launch
// lifecycle action: only the gate and the approver may.
func (p *NodePlayer) completeLifecycle(n cloud.GPUNode, script string) error {
	if strings.Contains(script, "lifecycle complete") || strings.Contains(script, "CompleteLifecycleAction") {
		return fmt.Errorf("node %d (%s): its bootstrap completes its own lifecycle action", n.Index, n.InstanceID)
	}
	return nil
}

// FootprintPlayer plays the instances of one CPU footprint.
type FootprintPlayer struct {
	*NodePlayer
	Lifecycle *LifecycleDouble
	order     map[string]int // instance id -> the order it was first seen
}

// NewFootprintPlayer builds hwprobe, makes a signer and registers the
// lifecycle-action double for the test.
func NewFootprintPlayer(t *testing.T, h *Harness) *FootprintPlayer {
	t.Helper()
	d, remove := RegisterAutoScalingLifecycle(h.Shim)
	t.Cleanup(remove)
	d.Terminate = func(ctx context.Context, id string) error {
		clients, err := h.Clients(ctx, Region)
		if err != nil {
			return err
		}
		_, err = clients.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		return err
	}
	return &FootprintPlayer{NodePlayer: NewNodePlayer(t, h), Lifecycle: d, order: map[string]int{}}
}

// WatchFootprint plays every new instance of footprint name until ctx
// ends. Behaviour(index, 0) says how the index-th instance seen behaves.
func (p *FootprintPlayer) WatchFootprint(ctx context.Context, name string) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.PlayNewFootprint(ctx, name); err != nil && ctx.Err() == nil {
			p.mu.Lock()
			p.errs = append(p.errs, err)
			p.mu.Unlock()
			p.Logf("node player: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// PlayNewFootprint plays the instances of footprint name not played yet.
func (p *FootprintPlayer) PlayNewFootprint(ctx context.Context, name string) error {
	clients, err := p.H.Clients(ctx, Region)
	if err != nil {
		return err
	}
	f, err := cloud.FindFootprint(ctx, clients.EC2, clients.AutoScaling, name)
	if errors.Is(err, cloud.ErrNotFound) || err == nil && f.Group == nil {
		return p.leaveSlurm(ctx, nil) // every instance is gone
	}
	if err == nil && f.LaunchTemplateID == "" {
		return nil
	}
	if err != nil {
		return err
	}
	var ids, terminating []string
	for _, in := range f.Group.Instances {
		switch {
		case in.LifecycleState == cloud.LifecycleTerminatingWait:
			// Held by the group's terminate hook: still running, its
			// target lifecycle state "Terminated".
			ids = append(ids, in.ID)
			terminating = append(terminating, in.ID)
		case !strings.HasPrefix(in.LifecycleState, "Terminat"):
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	out, err := clients.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		return err
	}
	zones, err := cloud.FindZones(ctx, clients.EC2)
	if err != nil {
		return err
	}
	zoneID := map[string]string{}
	for _, z := range zones {
		zoneID[z.Name] = z.ID
	}
	var nodes []cloud.GPUNode
	running := map[string]bool{}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.State != nil && (in.State.Name == "running" || in.State.Name == "pending") {
				running[aws.ToString(in.InstanceId)] = true
			}
		}
	}
	// Instances that shut down leave Slurm as their leave unit makes them.
	if err := p.leaveSlurm(ctx, running); err != nil {
		return err
	}
	for _, id := range terminating {
		if err := p.watchSlurmLifecycle(ctx, id); err != nil {
			return err
		}
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.State == nil || in.State.Name != "running" || slices.Contains(terminating, aws.ToString(in.InstanceId)) {
				continue
			}
			id := aws.ToString(in.InstanceId)
			p.mu.Lock()
			idx, ok := p.order[id]
			if !ok {
				idx = len(p.order)
				p.order[id] = idx
			}
			p.mu.Unlock()
			zone := aws.ToString(in.Placement.AvailabilityZone)
			tags := map[string]string{}
			for _, t := range in.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			nodes = append(nodes, cloud.GPUNode{Index: idx, InstanceID: id, State: "running", InstanceType: string(in.InstanceType), ImageID: aws.ToString(in.ImageId),
				PrivateIP: aws.ToString(in.PrivateIpAddress), Zone: zone, ZoneID: zoneID[zone], LaunchTime: aws.ToTime(in.LaunchTime), Tags: tags})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Index < nodes[j].Index })
	for _, n := range nodes {
		p.mu.Lock()
		done := p.played[n.InstanceID]
		p.played[n.InstanceID] = true
		p.mu.Unlock()
		if done {
			if err := p.answer(ctx, clients, n); err != nil {
				return fmt.Errorf("instance %d (%s): %w", n.Index, n.InstanceID, err)
			}
			continue
		}
		b := NodeBehaviour{}
		if p.Behaviour != nil {
			b = p.Behaviour(n.Index, 0)
		}
		if b.Silent {
			p.Logf("node player: instance %d (%s) stays silent", n.Index, n.InstanceID)
			continue
		}
		if err := p.play(ctx, clients, f.LaunchTemplateID, n, b); err != nil {
			return fmt.Errorf("instance %d (%s): %w", n.Index, n.InstanceID, err)
		}
	}
	return nil
}
